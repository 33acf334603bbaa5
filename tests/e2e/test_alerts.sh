#!/usr/bin/env bash
# The alert rules (docs/operations.md "Alerts worth setting"), tested as Prometheus runs them:
#   - the spec of deploy/kubernetes/base/prometheusrule.yaml (the one source) is written out as
#     a plain rules file and passes `promtool check rules`;
#   - `promtool test rules` with tests/e2e/alerts.test.yaml passes: series over time, which
#     alerts fire with which labels and annotations;
#   - every alert of the rules has a case in that file where it fires and one where it does not;
#   - a copy of the rules with a threshold changed makes `promtool test rules` fail (the tests
#     can fail).
# promtool comes with Debian's prometheus package (scripts/deps.sh); without it the test fails
# under CI=true and is skipped (exit 77) otherwise.
set -euo pipefail
STEP=start
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/readme_lib.sh"

need_promtool
RULE=$REPO/deploy/kubernetes/base/prometheusrule.yaml
TESTS=$REPO/tests/e2e/alerts.test.yaml

STEP="promtool check rules"
python3 - "$RULE" "$TMP/rules.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
assert doc["kind"] == "PrometheusRule", doc.get("kind")
yaml.safe_dump(doc["spec"], open(sys.argv[2], "w", encoding="utf-8"), sort_keys=False)
PY
out=$(promtool check rules "$TMP/rules.yaml" 2>&1) || fail "$out"
echo "ok - the PrometheusRule's spec passes promtool check rules: $(grep -o '[0-9]* rules found' <<<"$out")"

STEP="every alert fires and stays quiet in a test"
out=$(python3 - "$TMP/rules.yaml" "$TESTS" <<'PY'
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
tests = yaml.safe_load(open(sys.argv[2], encoding="utf-8"))
alerts = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
fires, quiet = set(), set()
for t in tests["tests"]:
    for c in t.get("alert_rule_test", []):
        (fires if c.get("exp_alerts") else quiet).add(c["alertname"])
missing = [f"{a}: no case where it fires" for a in alerts if a not in fires]
missing += [f"{a}: no case where it does not fire" for a in alerts if a not in quiet]
missing += [f"{a}: tested but not in the rules" for a in sorted(fires | quiet) if a not in alerts]
print("\n".join(missing) if missing else len(alerts))
sys.exit(1 if missing else 0)
PY
) || fail "$out"
echo "ok - each of the $out alerts has a case where it fires and one where it does not"

STEP="promtool test rules"
cp "$TESTS" "$TMP/alerts.test.yaml"
out=$(promtool test rules "$TMP/alerts.test.yaml" 2>&1) || fail "$out"
echo "ok - promtool test rules: $(tr -s ' \n' ' ' <<<"$out")"

STEP="a changed threshold fails the tests"
mkdir "$TMP/broken"
python3 - "$TMP/rules.yaml" "$TMP/broken/rules.yaml" <<'PY' || fail "no McpqQueueWaitHigh ending in > 5"
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
rule = [r for g in rules["groups"] for r in g["rules"] if r.get("alert") == "McpqQueueWaitHigh"][0]
assert rule["expr"].rstrip().endswith("> 5"), rule["expr"]
rule["expr"] = rule["expr"].rstrip() + "0"
yaml.safe_dump(rules, open(sys.argv[2], "w", encoding="utf-8"), sort_keys=False)
PY
cp "$TESTS" "$TMP/broken/alerts.test.yaml"
if out=$(promtool test rules "$TMP/broken/alerts.test.yaml" 2>&1); then
    fail "promtool test rules passed with McpqQueueWaitHigh at 50 s"
fi
grep -q 'alertname: McpqQueueWaitHigh' <<<"$out" || fail "the broken copy failed otherwise: $out"
echo "ok - with the queue wait threshold at 50 s, promtool test rules fails on McpqQueueWaitHigh"
