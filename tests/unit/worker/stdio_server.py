#!/usr/bin/env python3
"""A small stdio MCP server for tests/unit/worker/test_stdiopool.c: the cases
server-everything cannot show on demand (a crash, a silent or refusing initialize, a
closed stdout, an overlong line, server-to-client requests, cancellation seen by the server).

    stdio_server.py MODE      ok | noinit | crash-init | badversion | modern | quiet

server/discover is answered -32601 (a legacy server), except in modern (a 2026-07-28 server:
discover answered, initialize refused) and quiet (discover never answered).

Tools (tools/call name): echo (its arguments back, after a progress notification for the
call's progressToken, a log message and a resources/updated notification), answers (what
the client answered to the ping and roots/list this server sent at initialize), env (its
environment), crash (exits 5), closeout (closes stdout, then waits), big (one line of
200000 bytes), hang (a progress notification, then no answer), cancelled (the requestIds of
the notifications/cancelled received), ask (sends elicitation/create for the call and
answers the call with the client's response to it, once it comes), caps (the capabilities
the client declared at initialize); and for a 2026-07-28 client (tests/integration/
test_mcp_relay.c) state_once (input_required with only a requestState, then its echo back),
state_loop (input_required with a new requestState at every call, forever) and bad_input
(input_required asking tools/call, which no client answers).
"""
import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
answers = {}
cancelled = []
asking = {}  # the id of our elicitation/create -> the call waiting for its answer
declared = {}


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def result(mid, res):
    send({"jsonrpc": "2.0", "id": mid, "result": res})


def text(mid, s):
    result(mid, {"content": [{"type": "text", "text": s}]})


def call(mid, params):
    name = params.get("name")
    args = params.get("arguments", {})
    token = params.get("_meta", {}).get("progressToken")
    if name == "echo":
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": token, "progress": 1, "total": 2, "message": "half"}})
        send({"jsonrpc": "2.0", "method": "notifications/message",
              "params": {"level": "info", "data": "echo log"}})
        send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
              "params": {"uri": "test://r"}})
        text(mid, json.dumps(args))
    elif name == "answers":
        text(mid, json.dumps(answers))
    elif name == "env":
        text(mid, json.dumps(dict(os.environ)))
    elif name == "crash":
        sys.exit(5)
    elif name == "closeout":
        sys.stdout.flush()
        os.close(1)
        time.sleep(30)
    elif name == "big":
        text(mid, "x" * 200000)
    elif name == "hang":
        send({"jsonrpc": "2.0", "method": "notifications/progress",
              "params": {"progressToken": token, "progress": 0}})
    elif name == "meta":
        text(mid, json.dumps(params.get("_meta", {})))
    elif name == "cancelled":
        text(mid, json.dumps(cancelled))
    elif name == "ask":
        asking["e" + str(mid)] = mid
        send({"jsonrpc": "2.0", "id": "e" + str(mid), "method": "elicitation/create",
              "params": {"message": "Your name?", "requestedSchema": {
                  "type": "object", "properties": {"name": {"type": "string"}}}}})
    elif name == "caps":
        text(mid, json.dumps(declared))
    elif name == "state_once":
        if params.get("requestState") == "abc":
            text(mid, "state abc came back")
        else:
            result(mid, {"resultType": "input_required", "requestState": "abc"})
    elif name == "state_loop":
        result(mid, {"resultType": "input_required", "requestState": "s" + str(mid)})
    elif name == "bad_input":
        result(mid, {"resultType": "input_required",
                     "inputRequests": {"x": {"method": "tools/call", "params": {}}}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no such tool"}})


def main():
    print("stdio test server starting (" + MODE + ")", file=sys.stderr, flush=True)
    sys.stdout.write("this line is no JSON-RPC message\n")
    sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        method = msg.get("method")
        mid = msg.get("id")
        if method == "server/discover":
            if MODE == "modern":
                result(mid, {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                             "resultType": "complete"})
            elif MODE != "quiet":
                send({"jsonrpc": "2.0", "id": mid,
                      "error": {"code": -32601, "message": "Method not found"}})
        elif method == "initialize":
            if MODE == "modern":
                send({"jsonrpc": "2.0", "id": mid,
                      "error": {"code": -32600, "message": "2026-07-28 only"}})
                continue
            if MODE == "noinit":
                continue
            if MODE == "crash-init":
                sys.exit(3)
            declared.update(msg.get("params", {}).get("capabilities", {}))
            send({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
            send({"jsonrpc": "2.0", "id": "s2", "method": "roots/list"})
            version = "1999-01-01" if MODE == "badversion" else "2025-06-18"
            result(mid, {"protocolVersion": version, "capabilities": {"tools": {}},
                         "serverInfo": {"name": "stdio-test", "version": "1"}})
        elif method == "tools/call":
            call(mid, msg.get("params", {}))
        elif method == "notifications/cancelled":
            cancelled.append(msg["params"]["requestId"])
        elif method is None and mid in ("s1", "s2"):
            answers[mid] = msg.get("result", msg.get("error"))
        elif method is None and mid in asking:
            text(asking.pop(mid), json.dumps(msg.get("result", msg.get("error"))))


if __name__ == "__main__":
    main()
