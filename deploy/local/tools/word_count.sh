#!/bin/sh
# exec tool `word_count` (deploy/local/mcpq.json): counts the lines, words and characters of
# arguments.text. The call envelope (schemas/job.schema.json) arrives on stdin; the result,
# a CallToolResult JSON document, goes to stdout (docs/executors.md, "exec"). JSON is parsed with node, which
# mcpq's tooling needs anyway (scripts/deps.sh installs it).
set -eu
if ! command -v node >/dev/null 2>&1; then
    echo "word_count: node is not installed (scripts/deps.sh installs it)"
    exit 1
fi
# shellcheck disable=SC2016 # the single-quoted text is JavaScript, not shell
exec node -e '
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => { input += d; });
process.stdin.on("end", () => {
  const envelope = JSON.parse(input);
  const text = String((envelope.arguments || {}).text ?? "");
  const newlines = (text.match(/\n/g) || []).length;
  const lines = text === "" ? 0 : newlines + (text.endsWith("\n") ? 0 : 1);
  const words = text.split(/\s+/).filter(Boolean).length;
  const chars = [...text].length;
  process.stdout.write(JSON.stringify({
    content: [{ type: "text", text: `${lines} lines, ${words} words, ${chars} characters` }],
    structuredContent: { lines, words, chars },
    isError: false,
  }) + "\n");
});
'
