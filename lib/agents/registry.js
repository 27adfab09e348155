'use strict';

// Where the agent index comes from. In order: the host's own object; a
// fetch of the URL (the public registry by default) with If-None-Match
// from the cached copy's ETag (304: the cached copy); on any failure the
// cached copy, else the snapshot bundled with this package. Every copy is
// checked by schema.js before it is used or cached; a bad download never
// replaces a good cached copy.

const fs = require('node:fs');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { AcpError } = require('../errors.js');
const { checkIndex } = require('./schema.js');
const { fetchFollowing, readBody, shown } = require('./download.js');

const DEFAULT_INDEX_URL = 'https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json';
const MAX_INDEX_BYTES = 8 * 1024 * 1024;

function parse(text, source) {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new AcpError('ERR_ACP_AGENT_INDEX', `the agent index from ${source} is not JSON: ${err.message}`, { source });
  }
}

function readCache(dir) {
  try {
    const text = fs.readFileSync(path.join(dir, 'registry.json'), 'utf8');
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'meta.json'), 'utf8'));
    return { text, meta };
  } catch {
    return null;
  }
}

function writeCache(dir, text, meta) {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, data] of [
    ['registry.json', text],
    ['meta.json', JSON.stringify(meta)],
  ]) {
    const tmp = path.join(dir, `.${name}.${randomBytes(4).toString('hex')}`);
    fs.writeFileSync(tmp, data);
    fs.renameSync(tmp, path.join(dir, name));
  }
}

function bundled() {
  // require(), not a file read: a bundler inlines it.
  return {
    ...checkIndex(require('./registry-snapshot.json'), 'the bundled snapshot'),
    source: /** @type {const} */ ('bundled'),
  };
}

/**
 * Fetch `url` as text with the cached ETag; `{status: 200|304, text, etag}`.
 *
 * @param {string} url
 * @param {string | undefined} etag
 * @param {{ timeoutMs?: number, signal?: AbortSignal, fetchImpl?: typeof fetch }} [options]
 */
async function fetchIndex(url, etag, { timeoutMs = 30_000, signal, fetchImpl } = {}) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const onAbort = () => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const res = await fetchFollowing(url, {
      headers: etag ? { 'if-none-match': etag } : {},
      signal: controller.signal,
      fetchImpl,
    });
    if (res.status === 304) return { status: 304 };
    const chunks = [];
    await readBody(res, {
      url,
      maxBytes: MAX_INDEX_BYTES,
      stallMs: timeoutMs,
      deadline: Date.now() + timeoutMs,
      abort: () => controller.abort(),
      onChunk: (b) => chunks.push(Buffer.from(b)),
    });
    return { status: 200, text: Buffer.concat(chunks).toString('utf8'), etag: res.headers.get('etag') ?? undefined };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The checked index: `{version, agents, problems, source, stale?, error?}`,
 * `source` one of 'object', 'network', 'cache', 'bundled'. With `offline`
 * the network is not tried. `error` says why a fallback was used.
 *
 * @param {{ index?: string | import('../../types/agents').RegistryIndex, cacheDir?: string, offline?: boolean,
 *   timeoutMs?: number, signal?: AbortSignal, fetchImpl?: typeof fetch }} [options]
 */
async function loadIndex({ index = DEFAULT_INDEX_URL, cacheDir, offline = false, timeoutMs, signal, fetchImpl } = {}) {
  if (index !== null && typeof index === 'object')
    return { ...checkIndex(index, 'the index object'), source: /** @type {const} */ ('object') };
  if (typeof index !== 'string')
    throw new AcpError('ERR_ACP_INVALID_ARGUMENT', 'agents.index must be a URL or an index object', {
      argument: 'agents.index',
    });
  // A cached copy is only reused for the URL it came from.
  const cached = cacheDir ? readCache(cacheDir) : null;
  const usable = cached && cached.meta.url === index ? cached : null;
  const fallback = (error) => {
    if (usable) {
      try {
        return {
          ...checkIndex(parse(usable.text, 'the cache'), 'the cached index'),
          source: /** @type {const} */ ('cache'),
          stale: true,
          error,
        };
      } catch {}
    }
    return { ...bundled(), stale: true, error };
  };
  if (offline) return fallback(undefined);
  let got;
  try {
    got = await fetchIndex(index, usable?.meta.etag, { timeoutMs, signal, fetchImpl });
  } catch (err) {
    if (signal?.aborted) throw new AcpError('ERR_ACP_ABORTED', 'loading the agent index was aborted', {});
    return fallback(
      err instanceof AcpError
        ? err
        : new AcpError('ERR_ACP_AGENT_DOWNLOAD', `cannot fetch ${shown(index)}: ${err.cause?.code ?? err.message}`, {}),
    );
  }
  if (got.status === 304 && usable) {
    const checked = checkIndex(parse(usable.text, 'the cache'), 'the cached index');
    writeCache(cacheDir, usable.text, { ...usable.meta, checkedAt: Date.now() });
    return { ...checked, source: /** @type {const} */ ('cache'), stale: false };
  }
  if (got.status === 304)
    return fallback(new AcpError('ERR_ACP_AGENT_INDEX', `${shown(index)} answered 304 with nothing cached`, {}));
  let checked;
  try {
    checked = checkIndex(parse(got.text, shown(index)), shown(index));
  } catch (err) {
    return fallback(err);
  }
  if (cacheDir) writeCache(cacheDir, got.text, { url: index, etag: got.etag, fetchedAt: Date.now() });
  return { ...checked, source: /** @type {const} */ ('network'), stale: false };
}

module.exports = { loadIndex, DEFAULT_INDEX_URL };
