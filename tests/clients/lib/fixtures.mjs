// The resources, templates, prompts and completions of mcpq-clients.json (the conformance
// fixtures, some static in the registry, some produced by a worker) as any SDK client reads
// them: shared by sdk-v1.test.mjs and sdk-v2.test.mjs. Each check returns what it read, for
// the era's own assertions.
import assert from 'node:assert/strict';

const PNG_MAGIC = '\x89PNG';

/** Every page of a list method of an SDK client (v1 or v2: the same method names). */
export async function listAll(client, method, key) {
  const items = [];
  let cursor;
  do {
    const page = await client[method](cursor ? { cursor } : {});
    items.push(...page[key]);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** resources/list, templates/list and reads of static, worker and template resources. */
export async function checkResources(client) {
  const uris = (await listAll(client, 'listResources', 'resources')).map((r) => r.uri);
  for (const u of ['test://static-text', 'test://static-binary', 'test://watched-resource', 'test://worker-resource']) {
    assert.ok(uris.includes(u), `resources/list lacks ${u}: ${uris.join(', ')}`);
  }
  const templates = await listAll(client, 'listResourceTemplates', 'resourceTemplates');
  assert.deepEqual(templates.map((t) => t.uriTemplate), ['test://template/{id}/data']);

  const text = await client.readResource({ uri: 'test://static-text' });
  assert.deepEqual(text.contents, [{ uri: 'test://static-text', mimeType: 'text/plain',
    text: 'This is the content of the static text resource.' }]);
  const bin = await client.readResource({ uri: 'test://static-binary' });
  assert.equal(bin.contents[0].mimeType, 'image/png');
  assert.equal(Buffer.from(bin.contents[0].blob, 'base64').subarray(0, 4).toString('latin1'), PNG_MAGIC);

  // Read by a worker: every read is a job of its own.
  const w1 = await client.readResource({ uri: 'test://worker-resource' });
  const w2 = await client.readResource({ uri: 'test://worker-resource' });
  assert.equal(w1.contents[0].uri, 'test://worker-resource');
  assert.equal(w1.contents[0].mimeType, 'text/plain');
  assert.match(w1.contents[0].text, /^worker resource read in job \S+/);
  assert.notEqual(w1.contents[0].text, w2.contents[0].text, 'two reads are two jobs');

  const tpl = await client.readResource({ uri: 'test://template/42/data' });
  assert.equal(tpl.contents[0].uri, 'test://template/42/data');
  assert.equal(tpl.contents[0].mimeType, 'application/json');
  assert.deepEqual(JSON.parse(tpl.contents[0].text), { id: '42', templateTest: true, data: 'Data for ID: 42' });

  await assert.rejects(client.readResource({ uri: 'test://no-such-resource' }), (err) => {
    assert.ok([-32002, -32602].includes(err.code), `unknown resource: ${err.code} ${err.message}`);
    return true;
  });
  return { text, tpl, worker: w1 };
}

/** prompts/list, a static prompt with arguments, one produced by a worker, completions. */
export async function checkPrompts(client) {
  const names = (await listAll(client, 'listPrompts', 'prompts')).map((p) => p.name);
  for (const n of ['test_simple_prompt', 'test_prompt_with_arguments', 'test_prompt_with_embedded_resource', 'test_prompt_with_image']) {
    assert.ok(names.includes(n), `prompts/list lacks ${n}: ${names.join(', ')}`);
  }
  const args = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'alpha', arg2: 'beta' } });
  assert.deepEqual(args.messages, [{ role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='alpha', arg2='beta'" } }]);
  await assert.rejects(client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'alpha' } }),
    (err) => err.code === -32602 && /arg2/.test(err.message));

  const image = await client.getPrompt({ name: 'test_prompt_with_image' });
  assert.equal(image.messages.length, 2, JSON.stringify(image));
  assert.equal(image.messages[0].content.type, 'image');
  assert.equal(Buffer.from(image.messages[0].content.data, 'base64').subarray(0, 4).toString('latin1'), PNG_MAGIC);
  assert.deepEqual(image.messages[1], { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } });

  const byPrompt = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'test' } });
  assert.deepEqual(byPrompt.completion.values, ['test', 'testValue1', 'testing']);
  const byTemplate = await client.complete({ ref: { type: 'ref/resource', uri: 'test://template/{id}/data' },
    argument: { name: 'id', value: '12' } });
  assert.deepEqual(byTemplate.completion.values, ['123', '124']);
  return { args, image, byPrompt };
}
