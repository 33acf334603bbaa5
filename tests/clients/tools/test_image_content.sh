#!/bin/sh
# MCP conformance server fixture `test_image_content` (scenario tools-call-image): a 1x1 red PNG.
cat >/dev/null
printf '%s\n' '{"content":[{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC","mimeType":"image/png"}]}'
