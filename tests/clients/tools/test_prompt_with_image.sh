#!/bin/sh
# MCP conformance fixture: prompt `test_prompt_with_image` (scenario prompts-get-with-image),
# produced by a worker. Its CallToolResult becomes the prompt's messages (image content ->
# an image user message, text -> a text user message).
cat >/dev/null
printf '%s\n' '{"content":[{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC","mimeType":"image/png"},{"type":"text","text":"Please analyze the image above."}]}'
