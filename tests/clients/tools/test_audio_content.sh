#!/bin/sh
# MCP conformance server fixture `test_audio_content` (scenario tools-call-audio): 16 silent
# samples of 8 kHz 16-bit mono WAV.
cat >/dev/null
printf '%s\n' '{"content":[{"type":"audio","data":"UklGRkQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YSAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==","mimeType":"audio/wav"}]}'
