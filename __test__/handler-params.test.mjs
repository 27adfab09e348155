import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mockSession, reported } from './helpers.mjs';

// A hostile agent's permission request: `rawInput` is 30M zeros, a 60 MB
// line. Parsed whole it was a 30M-element array on the host's JS thread.
const ZEROS = 30_000_000;
const MiB = 1024 * 1024;
const jsMemory = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};

test('a 60 MB permission request reaches the handler cut, its full params on demand, and the answer reaches the agent', async () => {
  let seen;
  const { client, sessionId, updates } = await mockSession({
    handlers: {
      'session/request_permission': (params, ctx) => {
        // Measured before anything else holds memory for the handler.
        const grown = jsMemory() - before;
        const raw = ctx.rawParams();
        seen = {
          params,
          cut: ctx.paramsCut,
          grown,
          rawLength: raw.length,
          zerosAt: raw.indexOf('"rawInput":[0,0,'),
          ctx,
        };
        return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
      },
    },
  });
  const before = jsMemory();
  await client.prompt({ sessionId, prompt: `permission:${ZEROS}` });
  const { params, cut, grown, rawLength, zerosAt, ctx } = seen;
  assert.equal(cut, true);
  // What answers the request is whole; the payload is a marker.
  assert.equal(params.sessionId, sessionId);
  assert.deepEqual(
    params.options.map((o) => o.optionId),
    ['allow_once', 'allow_always', 'reject_once', 'reject_always'],
  );
  assert.equal(params.toolCall.toolCallId, 'call_shell');
  assert.equal(params.toolCall.title, 'Run `rm -rf build`');
  assert.deepEqual(params.toolCall.rawInput, { $omitted: 'size', bytes: ZEROS * 24 });
  // The full text, on demand.
  assert.ok(rawLength > ZEROS * 2, `full params: ${rawLength} chars`);
  assert.ok(zerosAt > 0, 'the full params hold the zeros');
  // The JS heap never held the agent's array (30M elements: > 120 MB).
  assert.ok(grown < 64 * MiB, `JS memory grew ${(grown / MiB).toFixed(1)} MiB for the request`);
  // The answer reached the agent.
  assert.deepEqual(reported(updates, 'permission').result, {
    outcome: { outcome: 'selected', optionId: 'allow_once' },
  });
  // Answered: the core let the full text go.
  assert.throws(() => ctx.rawParams(), { code: 'ERR_ACP_CLOSED' });
  await client.close();
});

test('params within maxHandlerParamsBytes arrive as sent; a lower limit cuts them', async () => {
  const calls = [];
  const handler = (params, ctx) => {
    calls.push({ params, cut: ctx.paramsCut, raw: JSON.parse(ctx.rawParams()) });
    return { outcome: { outcome: 'cancelled' } };
  };
  let { client, sessionId } = await mockSession({ handlers: { 'session/request_permission': handler } });
  await client.prompt({ sessionId, prompt: 'permission:1000' });
  await client.close();
  assert.equal(calls[0].cut, false);
  assert.equal(calls[0].params.toolCall.rawInput.length, 1000);
  assert.deepEqual(calls[0].raw, calls[0].params);

  ({ client, sessionId } = await mockSession({
    maxHandlerParamsBytes: 4096,
    handlers: { 'session/request_permission': handler },
  }));
  await client.prompt({ sessionId, prompt: 'permission:1000' });
  await client.close();
  assert.equal(calls[1].cut, true);
  assert.deepEqual(calls[1].params.toolCall.rawInput, { $omitted: 'size', bytes: 1000 * 24 });
  assert.equal(calls[1].raw.toolCall.rawInput.length, 1000);
  assert.equal(calls[1].params.options.length, 4);
});
