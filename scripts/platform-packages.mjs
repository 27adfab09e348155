// The per-platform packages the release publishes, `{ name: version }`:
// every napi target's `acp-native-<platform>` at the root version. This is
// what `napi pre-publish` writes into the root's optionalDependencies at
// publish time (the repository's package.json does not declare them: see
// docs/development.md, "Lock file").
import { createRequire } from 'node:module';

const { TRIPLES } = createRequire(import.meta.url)('../lib/loader.js');

export function platformPackages(rootPkg) {
  const byTriple = Object.fromEntries(Object.entries(TRIPLES).map(([platform, triple]) => [triple, platform]));
  return Object.fromEntries(
    rootPkg.napi.targets.map((triple) => {
      if (!byTriple[triple]) throw new Error(`napi target ${triple} has no platform name in lib/loader.js`);
      return [`${rootPkg.name}-${byTriple[triple]}`, rootPkg.version];
    }),
  );
}
