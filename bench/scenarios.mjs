// What `npm run bench` measures. Sizes follow the targets.
export const SCENARIOS = {
  small: { title: '200k small updates (64 B text)', prompt: 'small:200000', updates: 200_000 },
  large: { title: '20k updates of 16 KB', prompt: 'large:20000:16384', updates: 20_000 },
  permission: { title: '2,000 sequential permission round trips', prompt: 'permission:2000', roundTrips: 2000 },
  ping: { title: '5,000 sequential ping requests', pings: 5000 },
  slow: {
    title: 'flood of 20k × 16 KB into a handler that awaits',
    prompt: 'large:20000:16384',
    updates: 20_000,
    slowHandler: true,
  },
};

// "Stream to a UI" (bench/ui.mjs): text chunks of 64 B across messages,
// each message after a tool call, plus tool_call_updates.
export const UI = { chunks: 200_000, messages: 10, toolUpdates: 2_000 };
