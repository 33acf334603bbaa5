#!/bin/sh
# MCP conformance fixture `test_elicitation_sep1330_enums` (scenario elicitation-sep1330-enums):
# an interactive exec tool (docs/tools.md, "Asking the user") that elicits a form with the five
# enum shapes of SEP-1330 (untitled and titled single-select, legacy enumNames, untitled and
# titled multi-select) and answers with the reply. stdin: the envelope line, then the answer
# line; stdout: the `input` line, then the result.
set -eu
IFS= read -r envelope || true
printf 'input {"method":"elicitation/create","params":{"message":"Please select options from the enum fields","requestedSchema":{"type":"object","properties":{"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}}}\n'
IFS= read -r answer || answer=null
[ -n "$answer" ] || answer=null
printf '{"content":[{"type":"text","text":"Elicitation completed: %s"}],"structuredContent":{"answer":%s}}\n' \
    "$(printf '%s' "$answer" | sed 's/\\/\\\\/g; s/"/\\"/g')" "$answer"
