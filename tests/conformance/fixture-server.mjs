// Conformance fixture: an MCP server of our own, written on the official
// TypeScript SDK 2.x (@modelcontextprotocol/server + @modelcontextprotocol/node),
// that implements every tool, resource, prompt and behaviour the server
// scenarios of the official conformance suite expect, in both protocol eras,
// on one endpoint:
//
//   - 2026-07-28 (stateless, per-request `_meta` envelope): served by the SDK's
//     createMcpHandler() in strict mode (`legacy: 'reject'`): server/discover,
//     the validation ladder (-32020/-32021/-32022/-32602, 404 for removed
//     methods), MRTR (input_required results), subscriptions/listen, caching
//     hints; everything the SDK owns we leave to it.
//   - 2025-era (initialize + Mcp-Session-Id): requests without an envelope are
//     routed (isLegacyRequest) to a *sessionful* Streamable HTTP transport per
//     session, with an in-memory event store (priming events, Last-Event-ID
//     resumption) so that the SSE scenarios, server->client requests
//     (sampling, elicitation: the SDK's legacy shim turns our input_required
//     returns into real requests on the tool call's stream), logging/setLevel
//     and resources/(un)subscribe all work.
//
// One factory (buildServer) defines the tools, resources and prompts once for
// both eras. The names and behaviours follow the scenario descriptions of
// @modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.12 (`conformance
// list` and each scenario's description); nothing here is copied from the
// suite repository's example server.
//
// DNS rebinding: the fixture checks `Host` (localhost, 127.0.0.1, [::1], any
// port: the SDK's localhost guard) and answers 403 otherwise, and it does NOT
// check `Origin`. That is deliberate: a proxy in front rewrites `Host` to the
// upstream's, so the dns-rebinding-protection scenario passes through a proxy
// only if the proxy checks Host/Origin on its own listener. Pass
// --check-origin to add the SDK's localhost Origin guard as well, or
// --no-host-check to drop the Host guard: a server with no DNS-rebinding
// protection at all, which fails the scenario directly (and passes it
// through mcpwarden: tests/integration/faults.test.mjs).
//
// Usage:
//   node tests/conformance/fixture-server.mjs [--host 127.0.0.1] [--port 0] [--check-origin]
//        [--no-host-check] [--unknown-session-400] [--quiet] [--stdin-guard]
// Prints one line `listening http://HOST:PORT/mcp` on stdout once it accepts
// connections; exits on SIGTERM/SIGINT, and with --stdin-guard also when its
// stdin closes (so a parent that dies cannot leave it behind).

import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  McpServer,
  ResourceTemplate,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
  createRequestStateCodec,
  fromJsonSchema,
  inputRequired,
  inputResponse,
  isLegacyRequest,
} from '@modelcontextprotocol/server';
import {
  localhostHostValidation,
  localhostOriginValidation,
  toNodeHandler,
} from '@modelcontextprotocol/node';

// ---- command line ----------------------------------------------------------

function parseArgs(argv) {
  const opts = { host: '127.0.0.1', port: Number(process.env.PORT ?? 0), checkHost: true, checkOrigin: false, quiet: false, stdinGuard: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--host') opts.host = argv[++i];
    else if (a === '--port') opts.port = Number(argv[++i]);
    else if (a === '--check-origin') opts.checkOrigin = true;
    else if (a === '--no-host-check') opts.checkHost = false;
    else if (a === '--quiet') opts.quiet = true;
    else if (a === '--stdin-guard') opts.stdinGuard = true;
    else if (a === '--unknown-session-400') opts.unknownSession400 = true;
    else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: fixture-server.mjs [--host H] [--port P] [--check-origin] [--no-host-check] [--unknown-session-400] [--quiet] [--stdin-guard]\n');
      process.exit(0);
    } else {
      process.stderr.write(`fixture-server: unknown argument ${a}\n`);
      process.exit(2);
    }
  }
  return opts;
}

const OPTS = parseArgs(process.argv.slice(2));
const SERVER_INFO = { name: 'mcpwarden-conformance-fixture', version: '1.0.0' };

// ---- content ---------------------------------------------------------------

// A 1x1 PNG (one red pixel), built here: signature, IHDR, IDAT, IEND.
function crc32(buf) {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}
function pngChunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
function onePixelPng() {
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]); // 1x1, 8-bit RGB
  // zlib stream of one scanline: filter 0, R=255 G=0 B=0 (stored block).
  const raw = Buffer.from([0, 255, 0, 0]);
  const adler = (() => {
    let a = 1, b = 0;
    for (const x of raw) { a = (a + x) % 65521; b = (b + a) % 65521; }
    const o = Buffer.alloc(4);
    o.writeUInt32BE(((b << 16) | a) >>> 0);
    return o;
  })();
  const idat = Buffer.concat([Buffer.from([0x78, 0x01, 0x01, raw.length, 0, (~raw.length) & 0xff, 0xff]), raw, adler]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0)),
  ]);
}
// A short WAV: 8 kHz, 8-bit mono, 80 samples of silence.
function shortWav() {
  const samples = Buffer.alloc(80, 128);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + samples.length, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(8000, 24);
  h.writeUInt32LE(8000, 28);
  h.writeUInt16LE(1, 32);
  h.writeUInt16LE(8, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(samples.length, 40);
  return Buffer.concat([h, samples]);
}
const PNG_B64 = onePixelPng().toString('base64');
const WAV_B64 = shortWav().toString('base64');
const BINARY_B64 = Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('base64');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- schemas ---------------------------------------------------------------

const NO_ARGS = { type: 'object', properties: {}, additionalProperties: false };
const schema = (s) => fromJsonSchema(s);
const stringArgs = (props, required = Object.keys(props)) => ({
  type: 'object',
  properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, { type: 'string', description: d }])),
  required,
});

// The json-schema-2020-12 scenario checks that these keywords survive
// tools/list untouched ($schema, $defs with $anchor, allOf/anyOf, if/then/else,
// additionalProperties).
const SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'addressDef',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

// SEP-2243: a tool whose arguments are mirrored into Mcp-Param-* headers.
const HEADER_PARAMS_SCHEMA = {
  type: 'object',
  properties: {
    region: { type: 'string', description: 'Deployment region', 'x-mcp-header': 'Region' },
    priority: { type: 'integer', description: 'Priority', 'x-mcp-header': 'Priority' },
    query: { type: 'string', description: 'Free text, not mirrored' },
  },
  required: ['region'],
};

const ELICIT_DEFAULTS_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', default: 'John Doe' },
    age: { type: 'integer', title: 'Age', default: 30 },
    score: { type: 'number', title: 'Score', default: 95.5 },
    status: { type: 'string', title: 'Status', enum: ['active', 'inactive', 'pending'], default: 'active' },
    verified: { type: 'boolean', title: 'Verified', default: true },
  },
};

const ELICIT_ENUMS_SCHEMA = {
  type: 'object',
  properties: {
    untitledSingle: { type: 'string', title: 'Untitled single', enum: ['option1', 'option2', 'option3'] },
    titledSingle: {
      type: 'string',
      title: 'Titled single',
      oneOf: [
        { const: 'value1', title: 'First Option' },
        { const: 'value2', title: 'Second Option' },
        { const: 'value3', title: 'Third Option' },
      ],
    },
    legacyEnum: {
      type: 'string',
      title: 'Legacy titled',
      enum: ['opt1', 'opt2', 'opt3'],
      enumNames: ['Option One', 'Option Two', 'Option Three'],
    },
    untitledMulti: {
      type: 'array',
      title: 'Untitled multi',
      items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
    },
    titledMulti: {
      type: 'array',
      title: 'Titled multi',
      items: {
        anyOf: [
          { const: 'value1', title: 'First Choice' },
          { const: 'value2', title: 'Second Choice' },
          { const: 'value3', title: 'Third Choice' },
        ],
      },
    },
  },
};

// ---- MRTR state ------------------------------------------------------------

// requestState is attacker-controlled on re-entry: every state this fixture
// mints is HMAC-sealed, and the SDK's verify hook rejects anything else with
// -32602 before a handler runs (the tampered-state scenario). The key lives
// for the process, which serves every round of a flow.
const stateCodec = createRequestStateCodec({ key: randomBytes(32), ttlSeconds: 600 });

const textResult = (text) => ({ content: [{ type: 'text', text }] });

function elicitAnswer(ctx, key) {
  const v = inputResponse(ctx.mcpReq.inputResponses, key);
  return v.kind === 'elicit' ? v : undefined;
}
function samplingText(ctx, key) {
  const v = inputResponse(ctx.mcpReq.inputResponses, key);
  if (v.kind !== 'sampling') return undefined;
  const c = v.result.content;
  const block = Array.isArray(c) ? c.find((b) => b.type === 'text') : c;
  return block?.type === 'text' ? block.text : JSON.stringify(c);
}
function rootsAnswer(ctx, key) {
  const v = inputResponse(ctx.mcpReq.inputResponses, key);
  return v.kind === 'roots' ? v.roots : undefined;
}
// The verified payload of this round's requestState, if it belongs to `tool`.
function stateFor(ctx, tool) {
  const p = ctx.mcpReq.requestState();
  return p && typeof p === 'object' && p.tool === tool ? p : undefined;
}

const elicitName = (message = 'What is your name?') => inputRequired.elicit({
  message,
  requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
});

// ---- the server factory ----------------------------------------------------

// Set once the modern handler exists; the list-changed trigger tools publish
// on its bus so open subscriptions/listen streams see the change.
let modernHandler;

function buildServer({ era }) {
  const legacy = era === 'legacy';
  const mcp = new McpServer(SERVER_INFO, {
    capabilities: {
      tools: { listChanged: true },
      prompts: { listChanged: true },
      resources: { listChanged: true, subscribe: true },
      logging: {},
      completions: {},
    },
    instructions: 'Conformance fixture for mcpwarden: tools, resources and prompts named as the official conformance suite expects.',
    requestState: { verify: (state, ctx) => stateCodec.verify(state, ctx) },
  });
  const tool = (name, description, inputSchema, cb) =>
    mcp.registerTool(name, { description, inputSchema: schema(inputSchema) }, cb);

  // -- content tools
  tool('test_simple_text', 'Returns a simple text block', NO_ARGS,
    async () => textResult('This is a simple text response for testing.'));
  tool('test_image_content', 'Returns a PNG image block', NO_ARGS,
    async () => ({ content: [{ type: 'image', data: PNG_B64, mimeType: 'image/png' }] }));
  tool('test_audio_content', 'Returns a WAV audio block', NO_ARGS,
    async () => ({ content: [{ type: 'audio', data: WAV_B64, mimeType: 'audio/wav' }] }));
  tool('test_embedded_resource', 'Returns an embedded text resource', NO_ARGS, async () => ({
    content: [{
      type: 'resource',
      resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
    }],
  }));
  tool('test_multiple_content_types', 'Returns text, image and resource blocks', NO_ARGS, async () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG_B64, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: JSON.stringify({ test: 'data', value: 123 }) },
      },
    ],
  }));
  tool('test_error_handling', 'Always fails with a tool error (isError)', NO_ARGS, async () => ({
    isError: true,
    content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
  }));

  // -- notifications during a call
  const logThrice = async (ctx) => {
    await ctx.mcpReq.log('info', 'Tool execution started');
    await sleep(50);
    await ctx.mcpReq.log('info', 'Tool processing data');
    await sleep(50);
    await ctx.mcpReq.log('info', 'Tool execution completed');
    return textResult('Tool with logging executed successfully');
  };
  tool('test_tool_with_logging', 'Sends three info log notifications during the call', NO_ARGS, async (_a, ctx) => logThrice(ctx));
  // 2026-07-28 server-stateless: logs must not appear unless the request set
  // _meta logLevel; the SDK filters, we just log.
  tool('test_logging_tool', 'Logs three messages (delivered only when the request sets a log level)', NO_ARGS,
    async (_a, ctx) => logThrice(ctx));
  tool('test_tool_with_progress', 'Reports progress 0, 50, 100 of 100 when given a progressToken', NO_ARGS, async (_a, ctx) => {
    const token = ctx.mcpReq._meta?.progressToken;
    for (const progress of [0, 50, 100]) {
      if (token !== undefined) {
        await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress, total: 100 } });
      }
      if (progress < 100) await sleep(50);
    }
    return textResult(`Tool with progress executed (progressToken ${token === undefined ? 'absent' : JSON.stringify(token)})`);
  });

  // -- client input. Written once as input_required returns: on 2026-07-28
  // the client fulfils them (MRTR); on a 2025 session the SDK's legacy shim
  // sends real sampling/createMessage and elicitation/create requests on the
  // tool call's stream and re-enters the handler with the answers.
  tool('test_sampling', 'Asks the client to sample an LLM completion for the prompt',
    stringArgs({ prompt: 'The prompt to send to the LLM' }), async ({ prompt }, ctx) => {
      const text = samplingText(ctx, 'llm');
      if (text !== undefined) return textResult(`LLM response: ${text}`);
      return inputRequired({
        inputRequests: {
          llm: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
            maxTokens: 100,
          }),
        },
      });
    });
  tool('test_elicitation', 'Asks the user for a username and an email address',
    stringArgs({ message: 'The message to show the user' }), async ({ message }, ctx) => {
      const ans = elicitAnswer(ctx, 'user');
      if (ans) return textResult(`User response: action=${ans.action}, content=${JSON.stringify(ans.content ?? {})}`);
      return inputRequired({
        inputRequests: {
          user: inputRequired.elicit({
            message,
            requestedSchema: {
              type: 'object',
              properties: {
                username: { type: 'string', description: "User's response" },
                email: { type: 'string', description: "User's email address" },
              },
              required: ['username', 'email'],
            },
          }),
        },
      });
    });
  const elicitWithSchema = (name, description, message, requestedSchema) =>
    tool(name, description, NO_ARGS, async (_a, ctx) => {
      const ans = elicitAnswer(ctx, 'form');
      if (ans) return textResult(`Elicitation completed: action=${ans.action}, content=${JSON.stringify(ans.content ?? {})}`);
      return inputRequired({ inputRequests: { form: inputRequired.elicit({ message, requestedSchema }) } });
    });
  elicitWithSchema('test_elicitation_sep1034_defaults', 'Elicitation whose schema carries defaults for every primitive type',
    'Please review and update the form fields with defaults', ELICIT_DEFAULTS_SCHEMA);
  elicitWithSchema('test_elicitation_sep1330_enums', 'Elicitation whose schema uses all five enum shapes',
    'Please pick from the enum fields', ELICIT_ENUMS_SCHEMA);

  // -- SSE polling (SEP-1699): close the POST stream mid-call; with the event
  // store the result is kept for a GET with Last-Event-ID.
  tool('test_reconnection', 'Closes its SSE stream mid-call; the client resumes with Last-Event-ID', NO_ARGS, async (_a, ctx) => {
    await sleep(100);
    ctx.http?.closeSSE?.();
    await sleep(200);
    return textResult('Reconnection test completed');
  });

  tool('json_schema_2020_12_tool', 'Tool with JSON Schema 2020-12 features', SCHEMA_2020_12,
    async (args) => textResult(`json_schema_2020_12_tool called with ${JSON.stringify(args)}`));
  tool('test_header_params', 'Arguments mirrored into Mcp-Param-* headers (SEP-2243)', HEADER_PARAMS_SCHEMA,
    async (args) => textResult(`header params: ${JSON.stringify(args)}`));

  // -- list changes (published on listen streams in 2026-07-28, as
  // notifications on the session in 2025)
  tool('test_trigger_tool_change', 'Announces a change of the tool list', NO_ARGS, async () => {
    if (legacy) mcp.sendToolListChanged();
    else modernHandler?.notify.toolsChanged();
    return textResult('tools/list_changed published');
  });
  tool('test_trigger_prompt_change', 'Announces a change of the prompt list', NO_ARGS, async () => {
    if (legacy) mcp.sendPromptListChanged();
    else modernHandler?.notify.promptsChanged();
    return textResult('prompts/list_changed published');
  });

  // -- multi-round-trip (SEP-2322) tools
  tool('test_missing_capability', 'Needs the sampling capability (declare it or get -32021)', NO_ARGS, async (_a, ctx) => {
    const text = samplingText(ctx, 'sample');
    if (text !== undefined) return textResult(`sampled: ${text}`);
    // The SDK answers -32021 (requiredCapabilities {sampling:{}}) when the
    // request's envelope does not declare sampling.
    return inputRequired({
      inputRequests: {
        sample: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
          maxTokens: 20,
        }),
      },
    });
  });
  tool('test_streaming_elicitation', 'Needs user input; asks for it with an input_required result, never a request on the stream', NO_ARGS, async (_a, ctx) => {
    const ans = elicitAnswer(ctx, 'user_name');
    if (ans?.action === 'accept') return textResult(`Hello, ${ans.content?.name ?? 'stranger'}!`);
    return inputRequired({ inputRequests: { user_name: elicitName() } });
  });
  tool('test_input_required_result_elicitation', 'Asks for the user name (one elicitation round)', NO_ARGS, async (_a, ctx) => {
    const ans = elicitAnswer(ctx, 'user_name');
    if (ans?.action === 'accept' && typeof ans.content?.name === 'string') return textResult(`Hello, ${ans.content.name}!`);
    if (ans) return textResult(`No name given (action=${ans.action})`);
    // Missing, wrong-key or malformed answers: ask again.
    return inputRequired({ inputRequests: { user_name: elicitName() } });
  });
  tool('test_input_required_result_sampling', 'Asks the client to sample an answer (one sampling round)', NO_ARGS, async (_a, ctx) => {
    const text = samplingText(ctx, 'capital_question');
    if (text !== undefined) return textResult(`Sampling response: ${text}`);
    return inputRequired({
      inputRequests: {
        capital_question: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
          maxTokens: 100,
        }),
      },
    });
  });
  tool('test_input_required_result_list_roots', "Asks for the client's roots (one roots/list round)", NO_ARGS, async (_a, ctx) => {
    const roots = rootsAnswer(ctx, 'client_roots');
    if (roots) return textResult(`Client roots: ${roots.map((r) => r.uri).join(', ') || '(none)'}`);
    return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
  });
  tool('test_input_required_result_request_state', 'One elicitation round with an HMAC-sealed requestState', NO_ARGS, async (_a, ctx) => {
    const name = 'test_input_required_result_request_state';
    const st = stateFor(ctx, name);
    const ans = elicitAnswer(ctx, 'confirm');
    if (st && ans) return textResult(`state-ok: confirmed=${JSON.stringify(ans.content?.ok ?? null)} (action=${ans.action})`);
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        }),
      },
      requestState: await stateCodec.mint({ tool: name, round: 1 }),
    });
  });
  tool('test_input_required_result_multiple_inputs', 'Elicitation, sampling and roots/list in one round', NO_ARGS, async (_a, ctx) => {
    const name = 'test_input_required_result_multiple_inputs';
    const st = stateFor(ctx, name);
    const user = elicitAnswer(ctx, 'user_name');
    const greeting = samplingText(ctx, 'greeting');
    const roots = rootsAnswer(ctx, 'client_roots');
    if (st && user && greeting !== undefined && roots) {
      return textResult(`name=${user.content?.name ?? '?'}; greeting=${greeting}; roots=${roots.length}`);
    }
    return inputRequired({
      inputRequests: {
        user_name: elicitName(),
        greeting: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
          maxTokens: 50,
        }),
        client_roots: inputRequired.listRoots(),
      },
      requestState: await stateCodec.mint({ tool: name, round: 1 }),
    });
  });
  tool('test_input_required_result_multi_round', 'Two elicitation rounds, the state evolving between them', NO_ARGS, async (_a, ctx) => {
    const name = 'test_input_required_result_multi_round';
    const st = stateFor(ctx, name);
    if (st?.round === 2) {
      const color = elicitAnswer(ctx, 'step2');
      if (color) return textResult(`name=${st.name}; color=${color.content?.color ?? '?'}`);
    }
    if (st?.round === 1) {
      const who = elicitAnswer(ctx, 'step1');
      if (who) {
        return inputRequired({
          inputRequests: {
            step2: inputRequired.elicit({
              message: 'Step 2: What is your favorite color?',
              requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
            }),
          },
          requestState: await stateCodec.mint({ tool: name, round: 2, name: who.content?.name ?? null }),
        });
      }
    }
    return inputRequired({
      inputRequests: { step1: elicitName('Step 1: What is your name?') },
      requestState: await stateCodec.mint({ tool: name, round: 1 }),
    });
  });
  tool('test_input_required_result_tampered_state', 'Round 2 is refused unless the sealed requestState is intact', NO_ARGS, async (_a, ctx) => {
    const name = 'test_input_required_result_tampered_state';
    // A tampered state never gets here: the verify hook answers -32602.
    if (stateFor(ctx, name) && elicitAnswer(ctx, 'confirm')) return textResult('state verified');
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({
          message: 'Please confirm',
          requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
        }),
      },
      requestState: await stateCodec.mint({ tool: name, round: 1 }),
    });
  });
  tool('test_input_required_result_capabilities', 'Asks only for input the request declared a capability for', NO_ARGS, async (_a, ctx) => {
    // 2026-07-28: the request's own envelope; a 2025 session: initialize.
    const caps = ctx.mcpReq.envelope?.['io.modelcontextprotocol/clientCapabilities']
      ?? mcp.server.getClientCapabilities?.() ?? {};
    const answered = ['sampled', 'elicited', 'roots'].some((k) => inputResponse(ctx.mcpReq.inputResponses, k).kind !== 'missing');
    const reqs = {};
    if (caps.sampling) {
      reqs.sampled = inputRequired.createMessage({
        messages: [{ role: 'user', content: { type: 'text', text: 'Say something' } }], maxTokens: 20,
      });
    }
    if (caps.elicitation) reqs.elicited = elicitName();
    if (caps.roots) reqs.roots = inputRequired.listRoots();
    if (answered || Object.keys(reqs).length === 0) {
      return textResult(`capabilities used: ${Object.keys(caps).sort().join(', ') || '(none)'}`);
    }
    return inputRequired({ inputRequests: reqs });
  });

  // -- resources
  mcp.registerResource('static-text', 'test://static-text',
    { description: 'A static text resource', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] }));
  mcp.registerResource('static-binary', 'test://static-binary',
    { description: 'A static binary resource', mimeType: 'application/octet-stream' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/octet-stream', blob: BINARY_B64 }] }));
  mcp.registerResource('watched-resource', 'test://watched-resource',
    { description: 'A resource clients may subscribe to', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content.' }] }));
  mcp.registerResource('template-data', new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { description: 'Data for an id, from a URI template', mimeType: 'application/json' },
    async (uri, { id }) => ({
      contents: [{
        uri: uri.href,
        mimeType: 'application/json',
        text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
      }],
    }));

  // resources/(un)subscribe exist only in the 2025 era (removed in
  // 2026-07-28, where listen's resourceSubscriptions replace them).
  if (legacy) {
    const subscribed = new Set();
    mcp.server.setRequestHandler('resources/subscribe', async (req) => {
      subscribed.add(req.params.uri);
      return {};
    });
    mcp.server.setRequestHandler('resources/unsubscribe', async (req) => {
      subscribed.delete(req.params.uri);
      return {};
    });
  }

  // -- prompts
  mcp.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' }, async () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  }));
  mcp.registerPrompt('test_prompt_with_arguments', {
    description: 'A prompt with two required arguments',
    argsSchema: schema(stringArgs({ arg1: 'First test argument', arg2: 'Second test argument' })),
  }, async ({ arg1, arg2 }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
  }));
  mcp.registerPrompt('test_prompt_with_embedded_resource', {
    description: 'A prompt embedding the resource named by resourceUri',
    argsSchema: schema(stringArgs({ resourceUri: 'URI of the resource to embed' })),
  }, async ({ resourceUri }) => ({
    messages: [
      { role: 'user', content: { type: 'resource', resource: { uri: resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
      { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
    ],
  }));
  mcp.registerPrompt('test_prompt_with_image', { description: 'A prompt carrying an image' }, async () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG_B64, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  }));
  mcp.registerPrompt('test_input_required_result_prompt', { description: 'A prompt that first asks the user for context' }, async (ctx) => {
    const ans = elicitAnswer(ctx, 'user_context');
    if (ans) {
      return {
        messages: [{ role: 'user', content: { type: 'text', text: `Use this context: ${ans.content?.context ?? '(none)'}` } }],
      };
    }
    return inputRequired({
      inputRequests: {
        user_context: inputRequired.elicit({
          message: 'What context should the prompt use?',
          requestedSchema: { type: 'object', properties: { context: { type: 'string' } }, required: ['context'] },
        }),
      },
    });
  });

  // -- completion: argument values for test_prompt_with_arguments
  const COMPLETIONS = ['paris', 'park', 'party', 'pasta', 'parrot', 'london', 'lisbon'];
  mcp.server.setRequestHandler('completion/complete', async (req) => {
    const value = String(req.params.argument?.value ?? '');
    const values = COMPLETIONS.filter((v) => v.startsWith(value.toLowerCase()));
    return { completion: { values, total: values.length, hasMore: false } };
  });

  return mcp;
}

// ---- 2025-era sessions -----------------------------------------------------

// A minimal in-memory event store (resumability): event ids are
// `<streamId>_<seq>`; a replay sends every later event of the same stream.
class MemoryEventStore {
  constructor(max = 1000) {
    this.events = [];
    this.seq = 0;
    this.max = max;
  }
  async storeEvent(streamId, message) {
    const eventId = `${streamId}_${++this.seq}`;
    this.events.push({ eventId, streamId, message });
    if (this.events.length > this.max) this.events.shift();
    return eventId;
  }
  async getStreamIdForEventId(eventId) {
    return this.events.find((e) => e.eventId === eventId)?.streamId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const at = this.events.findIndex((e) => e.eventId === lastEventId);
    if (at < 0) return '';
    const { streamId } = this.events[at];
    for (const e of this.events.slice(at + 1)) {
      if (e.streamId === streamId && e.message && Object.keys(e.message).length > 0) await send(e.eventId, e.message);
    }
    return streamId;
  }
}

const sessions = new Map(); // Mcp-Session-Id -> { transport, server }

function jsonError(status, code, message) {
  return new Response(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code, message } }), {
    status,
    headers: { 'Content-Type': 'application/json' },
  });
}

async function legacyFetch(request) {
  const sid = request.headers.get('mcp-session-id');
  if (sid) {
    const s = sessions.get(sid);
    // Unknown or terminated session: 404, so the client starts a new one.
    // --unknown-session-400 imitates servers that answer 400 instead (the
    // suite's reference fixture does), for testing a proxy that fixes it.
    if (!s && OPTS.unknownSession400) return jsonError(400, -32000, 'Bad Request: No valid session ID provided');
    if (!s) return jsonError(404, -32001, 'Session not found');
    return s.transport.handleRequest(request);
  }
  if (!['GET', 'POST', 'DELETE'].includes(request.method)) {
    const r = jsonError(405, -32000, 'Method not allowed.');
    r.headers.set('Allow', 'GET, POST, DELETE');
    return r;
  }
  if (request.method !== 'POST') return jsonError(400, -32000, 'Bad Request: Mcp-Session-Id header is required');
  // No session yet: a new transport + server; the transport itself answers
  // anything but initialize with 400.
  const server = buildServer({ era: 'legacy' });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: new MemoryEventStore(),
    retryInterval: 5000,
    onsessioninitialized: (id) => { sessions.set(id, { transport, server }); },
    onsessionclosed: (id) => { sessions.delete(id); },
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  await server.connect(transport);
  const res = await transport.handleRequest(request);
  if (!transport.sessionId) await server.close().catch(() => {});
  return res;
}

// ---- HTTP ------------------------------------------------------------------

modernHandler = createMcpHandler(buildServer, {
  legacy: 'reject',
  onerror: (e) => { if (!OPTS.quiet) process.stderr.write(`fixture: ${e?.message ?? e}\n`); },
});

async function route(request) {
  if (await isLegacyRequest(request)) return legacyFetch(request);
  return modernHandler.fetch(request);
}

const nodeHandler = toNodeHandler({ fetch: route }, {
  onerror: (e) => { if (!OPTS.quiet) process.stderr.write(`fixture: ${e?.message ?? e}\n`); },
});
const checkHost = localhostHostValidation();
const checkOrigin = localhostOriginValidation();

const httpServer = http.createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/mcp') {
    res.writeHead(404, { 'Content-Type': 'text/plain' });
    res.end('not found\n');
    return;
  }
  if (OPTS.checkHost && !checkHost(req, res)) return;
  if (OPTS.checkOrigin && !checkOrigin(req, res)) return;
  // Send the headers of an SSE reply at once: Node holds them until the
  // first body byte, and a standalone GET stream may stay silent for long.
  const writeHead = res.writeHead.bind(res);
  res.writeHead = (status, ...rest) => {
    const r = writeHead(status, ...rest);
    const h = rest.find((x) => x && typeof x === 'object' && !Array.isArray(x)) ?? {};
    const ct = Object.entries(h).find(([k]) => k.toLowerCase() === 'content-type')?.[1];
    if (/text\/event-stream/.test(String(ct ?? res.getHeader('content-type') ?? ''))) res.flushHeaders();
    return r;
  };
  nodeHandler(req, res).catch((e) => {
    if (!res.headersSent) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: String(e?.message ?? e) } }));
    } else {
      res.destroy();
    }
  });
});

httpServer.listen(OPTS.port, OPTS.host, () => {
  const { port } = httpServer.address();
  process.stdout.write(`listening http://${OPTS.host}:${port}/mcp\n`);
});

function shutdown() {
  httpServer.closeAllConnections?.();
  httpServer.close();
  for (const { transport } of sessions.values()) transport.close().catch(() => {});
  modernHandler.close().catch(() => {});
  setTimeout(() => process.exit(0), 200).unref();
}
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
if (OPTS.stdinGuard) {
  process.stdin.on('end', shutdown);
  process.stdin.on('error', shutdown);
  process.stdin.resume();
}
