// Stand-in for bcryptprimitives.dll, which Wine 8 lacks and Rust's std
// (1.78 and later) imports for ProcessPrng. Used only by
// scripts/platform-test.mjs inside its own Wine prefix; real Windows has
// the DLL.
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length); // RtlGenRandom (advapi32)

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length) {
    ULONG n = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    length -= n;
  }
  return TRUE;
}
