// docs/agents-tested.md is generated from the recipes the suite launches:
// a recipe changed without the docs (or the other way round) fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { recipesMarkdown } from './agents/recipes.mjs';

test('docs/agents-tested.md is the recipes as tested (regenerate: node interop/agents/recipes.mjs --docs > docs/agents-tested.md)', () => {
  const docs = readFileSync(new URL('../docs/agents-tested.md', import.meta.url), 'utf8');
  assert.equal(docs, recipesMarkdown());
});
