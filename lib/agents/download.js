'use strict';

// One download to a file, with Node's fetch, held to what a hostile or
// broken server can do: redirects followed by hand (counted, http(s) only),
// `Accept-Encoding: identity` and any other Content-Encoding refused (fetch
// would silently gunzip a .tar.gz into a .tar, and a gzip body cut short
// still "succeeds"), a size cap checked on the header and on every chunk,
// the body's length checked against Content-Length, a stall timer reset by
// each chunk, a total timeout, and the SHA-256 checked before anyone uses
// the file.

const fs = require('node:fs');
const { createHash } = require('node:crypto');
const { AcpError } = require('../errors.js');

const DEFAULTS = { maxBytes: 512 * 1024 * 1024, timeoutMs: 10 * 60_000, stallMs: 30_000, maxRedirects: 5 };

const downloadError = (message, fields) => new AcpError('ERR_ACP_AGENT_DOWNLOAD', message, fields);

/** Strip credentials and query from a URL before it goes into a message. */
function shown(url) {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<bad url>';
  }
}

/**
 * Fetch `url` (following at most `maxRedirects`) and return the response
 * whose status is 2xx/304, with `accept-encoding: identity`. `headers` are
 * added to each request (e.g. If-None-Match).
 *
 * @param {string} url
 * @param {{ headers?: Record<string, string>, maxRedirects?: number, signal?: AbortSignal, fetchImpl?: typeof fetch }} [options]
 * @returns {Promise<Response>}
 */
async function fetchFollowing(
  url,
  { headers = {}, maxRedirects = DEFAULTS.maxRedirects, signal, fetchImpl = fetch } = {},
) {
  let current = url;
  for (let hop = 0; ; hop++) {
    const u = new URL(current);
    if (u.protocol !== 'https:' && u.protocol !== 'http:')
      throw downloadError(`refusing to fetch ${shown(current)}: not http(s)`, { url: shown(url) });
    const res = await fetchImpl(current, {
      headers: { 'accept-encoding': 'identity', ...headers },
      redirect: 'manual',
      signal,
    });
    if (res.status >= 300 && res.status < 400 && res.status !== 304) {
      const location = res.headers.get('location');
      await res.body?.cancel().catch(() => {});
      if (!location)
        throw downloadError(`${shown(current)} redirected without a Location`, { url: shown(url), status: res.status });
      if (hop >= maxRedirects)
        throw downloadError(`${shown(url)}: more than ${maxRedirects} redirects`, { url: shown(url) });
      const next = new URL(location, current);
      // No downgrade: a TLS download is not handed to a plain-text hop.
      if (u.protocol === 'https:' && next.protocol !== 'https:') {
        throw downloadError(`${shown(current)} redirected to ${next.protocol} (no downgrade from https)`, {
          url: shown(url),
        });
      }
      current = next.href;
      continue;
    }
    if (res.status !== 304 && (res.status < 200 || res.status >= 300)) {
      await res.body?.cancel().catch(() => {});
      throw downloadError(`${shown(current)} answered HTTP ${res.status}`, { url: shown(url), status: res.status });
    }
    const encoding = (res.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity' && encoding !== '') {
      await res.body?.cancel().catch(() => {});
      throw downloadError(
        `${shown(current)} sent Content-Encoding: ${encoding.slice(0, 40)} (asked for identity): refused, the bytes would not be the file`,
        {
          url: shown(url),
        },
      );
    }
    return res;
  }
}

/**
 * Read a response body, calling `onChunk(buf)` for each chunk, within the
 * limits. Resolves with `{bytes, sha256}`; rejects ERR_ACP_AGENT_DOWNLOAD
 * on a stall, timeout, overlong or short body.
 *
 * @param {Response} res
 * @param {{ url: string, maxBytes: number, stallMs: number, deadline: number, abort: () => void,
 *   onChunk: (buf: Uint8Array) => void, onProgress?: (progress: { receivedBytes: number, totalBytes?: number }) => void }} limits
 * @returns {Promise<{ bytes: number, sha256: string }>}
 */
async function readBody(res, { url, maxBytes, stallMs, deadline, abort, onChunk, onProgress }) {
  const declared = res.headers.get('content-length');
  const total = declared !== null && /^\d+$/.test(declared) ? Number(declared) : undefined;
  if (total !== undefined && total > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw downloadError(`${shown(url)} is ${total} bytes, over the ${maxBytes}-byte cap`, {
      url: shown(url),
      maxBytes,
    });
  }
  const hash = createHash('sha256');
  let bytes = 0;
  if (!res.body) {
    if (total)
      throw downloadError(`${shown(url)} was cut short: 0 of ${total} bytes`, {
        url: shown(url),
        bytes: 0,
        expectedBytes: total,
      });
    return { bytes, sha256: hash.digest('hex') };
  }
  const reader = res.body.getReader();
  // Set by the timer: why the read below was aborted.
  let stalled = /** @type {false | 'timeout' | 'stall'} */ (false);
  let timer;
  const arm = () => {
    clearTimeout(timer);
    const left = deadline - Date.now();
    const wait = Math.max(0, Math.min(stallMs, left));
    timer = setTimeout(() => {
      stalled = left <= stallMs ? 'timeout' : 'stall';
      abort();
    }, wait);
  };
  try {
    arm();
    for (;;) {
      let chunk;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (stalled === 'stall')
          throw downloadError(`${shown(url)} sent nothing for ${stallMs} ms`, { url: shown(url) });
        if (stalled === 'timeout') throw downloadError(`${shown(url)} did not finish in time`, { url: shown(url) });
        throw downloadError(
          `${shown(url)}: the connection failed after ${bytes} bytes (${err.cause?.code ?? err.message})`,
          { url: shown(url), bytes },
        );
      }
      if (chunk.done) break;
      bytes += chunk.value.byteLength;
      if (bytes > maxBytes) {
        abort();
        throw downloadError(`${shown(url)} is over the ${maxBytes}-byte cap`, { url: shown(url), maxBytes });
      }
      hash.update(chunk.value);
      await onChunk?.(chunk.value);
      onProgress?.({ receivedBytes: bytes, totalBytes: total });
      arm();
    }
  } finally {
    clearTimeout(timer);
  }
  if (total !== undefined && bytes !== total) {
    throw downloadError(`${shown(url)} was cut short: ${bytes} of ${total} bytes`, {
      url: shown(url),
      bytes,
      expectedBytes: total,
    });
  }
  return { bytes, sha256: hash.digest('hex') };
}

/**
 * Download `url` into `file` (created exclusively). Options: `sha256`
 * (expected, any case; a mismatch deletes the file and throws
 * ERR_ACP_AGENT_INTEGRITY), `maxBytes`, `timeoutMs`, `stallMs`,
 * `maxRedirects`, `onProgress({receivedBytes, totalBytes})`, `signal`.
 * Resolves with `{bytes, sha256}`.
 *
 * @param {string} url
 * @param {string} file
 * @param {{ sha256?: string, maxBytes?: number, timeoutMs?: number, stallMs?: number, maxRedirects?: number,
 *   onProgress?: (progress: { receivedBytes: number, totalBytes?: number }) => void, signal?: AbortSignal,
 *   fetchImpl?: typeof fetch }} [options]
 */
async function downloadToFile(url, file, options = {}) {
  /** @type {typeof DEFAULTS & typeof options} */
  const o = { ...DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  const controller = new AbortController();
  const abort = () => controller.abort();
  const onOuterAbort = () => abort();
  o.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const deadline = Date.now() + o.timeoutMs;
  const headerTimer = setTimeout(abort, Math.min(o.timeoutMs, Math.max(o.stallMs, 1)));
  const fd = fs.openSync(file, 'wx', 0o600);
  let ok = false;
  try {
    let res;
    try {
      res = await fetchFollowing(url, {
        maxRedirects: o.maxRedirects,
        signal: controller.signal,
        fetchImpl: o.fetchImpl,
      });
    } catch (err) {
      if (err instanceof AcpError) throw err;
      if (o.signal?.aborted) throw new AcpError('ERR_ACP_ABORTED', 'the download was aborted', { url: shown(url) });
      const why = controller.signal.aborted
        ? `no answer within ${Math.min(o.timeoutMs, o.stallMs)} ms`
        : (err.cause?.code ?? err.message);
      throw downloadError(`cannot download ${shown(url)}: ${why}`, { url: shown(url) });
    } finally {
      clearTimeout(headerTimer);
    }
    if (res.status === 304) throw downloadError(`${shown(url)} answered 304 to a plain GET`, { url: shown(url) });
    const result = await readBody(res, {
      url,
      maxBytes: o.maxBytes,
      stallMs: o.stallMs,
      deadline,
      abort,
      onChunk: (buf) => {
        fs.writeSync(fd, buf);
      },
      onProgress: o.onProgress,
    }).catch((err) => {
      if (o.signal?.aborted) throw new AcpError('ERR_ACP_ABORTED', 'the download was aborted', { url: shown(url) });
      throw err;
    });
    if (o.sha256 !== undefined && result.sha256 !== o.sha256.toLowerCase()) {
      throw new AcpError(
        'ERR_ACP_AGENT_INTEGRITY',
        `${shown(url)}: SHA-256 ${result.sha256} is not the expected ${o.sha256.toLowerCase()}; refused`,
        {
          url: shown(url),
          expected: o.sha256.toLowerCase(),
          actual: result.sha256,
        },
      );
    }
    ok = true;
    return result;
  } finally {
    fs.closeSync(fd);
    o.signal?.removeEventListener('abort', onOuterAbort);
    if (!ok) fs.rmSync(file, { force: true });
  }
}

module.exports = { downloadToFile, fetchFollowing, readBody, shown, DEFAULTS };
