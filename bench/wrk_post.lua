-- wrk_post.lua: POST one fixed JSON-RPC body on every request, and print wrk's summary as
-- "key=value" lines for bench/run.sh.
--
-- Environment: BENCH_BODY (the request body), BENCH_AUTH (an Authorization header value,
-- optional), BENCH_ACCEPT (default "application/json"), BENCH_PROTOCOL_VERSION (optional
-- MCP-Protocol-Version header).
--
-- wrk counts only transport errors and non-2xx/3xx statuses; a 200 carrying a JSON-RPC error
-- would pass unnoticed, so run.sh checks the answer once with curl before each run and, for
-- mcpq, compares the ingress's /metrics call outcomes before and after.
wrk.method = "POST"
wrk.body = os.getenv("BENCH_BODY") or '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = os.getenv("BENCH_ACCEPT") or "application/json"
local auth = os.getenv("BENCH_AUTH")
if auth and auth ~= "" then
   wrk.headers["Authorization"] = auth
end
local pv = os.getenv("BENCH_PROTOCOL_VERSION")
if pv and pv ~= "" then
   wrk.headers["MCP-Protocol-Version"] = pv
end

done = function(summary, latency, requests)
   local secs = summary.duration / 1e6
   local e = summary.errors
   io.write(string.format("requests=%d\n", summary.requests))
   io.write(string.format("duration_s=%.3f\n", secs))
   io.write(string.format("rps=%.1f\n", summary.requests / secs))
   io.write(string.format("errors=%d\n", e.connect + e.read + e.write + e.status + e.timeout))
   io.write(string.format("errors_status=%d\n", e.status))
   io.write(string.format("latency_p50_ms=%.3f\n", latency:percentile(50) / 1000))
   io.write(string.format("latency_p90_ms=%.3f\n", latency:percentile(90) / 1000))
   io.write(string.format("latency_p99_ms=%.3f\n", latency:percentile(99) / 1000))
   io.write(string.format("latency_max_ms=%.3f\n", latency.max / 1000))
end
