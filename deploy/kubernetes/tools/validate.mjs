// Validates rendered Kubernetes manifests offline (scripts/check-deploy.sh runs it on the output
// of `kubectl kustomize` for the base and each overlay):
//
//   node validate.mjs --env-table FILE --schemas DIR [--external Kind/name ...]
//                     [--require-image-tags] [--no-plaintext-secrets] [--label TEXT]
//                     [--dump-runs DIR] FILE.yaml ...
//
// 1. Schema: every object against the OpenAPI schema of its apiVersion and kind, from npm
//    packages generated from the real schemas (package.json beside this file):
//    kubernetes-models (the Kubernetes API), @kubernetes-models/keda (KEDA's CRDs: ScaledObject)
//    and @kubernetes-models/prometheus-operator (ServiceMonitor, PodMonitor, PrometheusRule). A kind no package knows is an
//    error. Unknown fields are errors too, as the API server's strict field validation makes
//    them: the generated validators read every field the schema knows, so a field of a typed
//    object that the validator never read is one the schema does not have.
// 2. What the API server or the kubelet would refuse and a schema cannot say: a container
//    without an image, a volume with more or less than one source, a mount of a volume that
//    does not exist, a workload whose selector does not match its template.
// 3. References inside the rendered set: Secret and ConfigMap keys used by env, envFrom and
//    volumes (objects named by --external are created outside the manifests: only their name
//    is checked), Service and PodDisruptionBudget selectors, HPA, ScaledObject and StatefulSet
//    targets, ServiceMonitor and PodMonitor selectors and port names.
// 4. mcpq: MCPQ_* names and which binary reads them (--env-table: `mcpq-ingress --env-table`),
//    MCPQ_LISTEN on all addresses and on a container port, /readyz and /healthz probes on the
//    ingress, the config file of MCPQ_CONFIG (found through its volume and ConfigMap) against
//    schemas/config.schema.json with every *_env it names set in the container, the KEDA
//    Kafka trigger against the worker's MCPQ_KAFKA_BROKERS, MCPQ_TOPIC_JOBS and MCPQ_GROUP_ID,
//    and the termination grace periods against the drain budgets.
//    The listeners: with MCPQ_OPS_LISTEN set, the ingress's probes, ServiceMonitor and PodMonitor
//    use its port, and no Service exposes it together with the clients' port (MCPQ_LISTEN).
// 5. Hardening of every pod: non-root, RuntimeDefault seccomp, read-only root filesystem with
//    /tmp on a volume, no privilege escalation, ALL capabilities dropped, CPU and memory
//    requests and limits; with --require-image-tags, images pinned to a tag or digest.
// 6. With --no-plaintext-secrets: no container env var whose name ends in PASSWORD, SECRET,
//    TOKEN or KEY has a literal `value:`, no ConfigMap key so named, and no env value or
//    ConfigMap value holds a URL with a password (scheme://user:password@): secrets come from
//    Secrets, as secretKeyRef, envFrom or files on a Secret volume.
//
// With --dump-runs DIR it also writes, for every mcpq container, what scripts/check-deploy.sh
// needs to start the real binary on it (which rejects bad settings and a bad config file at
// start-up): DIR/<Kind>-<name>-<container>/binary, env (NAME=VALUE lines: the container's
// MCPQ_* settings and the *_env variables of its config file, with values from the rendered
// ConfigMaps and Secrets; the pod name for a fieldRef to metadata.name), mcpq.json (its
// config file, if any), unresolved (variables whose values are not in the manifests) and
// secretfiles (NAME=PATH lines: settings naming a file on a volume of a Secret that is not in
// the manifests; the check gives the binary stand-ins).
//
// Prints "ok"/"FAIL" per object and ends with "N objects, M errors"; exits 1 on any error.
import fs from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import Ajv2020 from "ajv/dist/2020.js";

// --- arguments ---------------------------------------------------------------------------------
const opts = { external: new Set(), files: [], requireTags: false, label: "" };
for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    if (a === "--env-table") opts.envTable = process.argv[++i];
    else if (a === "--schemas") opts.schemas = process.argv[++i];
    else if (a === "--external") opts.external.add(process.argv[++i]);
    else if (a === "--require-image-tags") opts.requireTags = true;
    else if (a === "--label") opts.label = process.argv[++i];
    else if (a === "--dump-runs") opts.dumpRuns = process.argv[++i];
    else if (a === "--no-plaintext-secrets") opts.noPlaintextSecrets = true;
    else if (a.startsWith("--")) usage(`unknown option ${a}`);
    else opts.files.push(a);
}
if (!opts.envTable || !opts.schemas || opts.files.length === 0) usage("missing arguments");

function usage(msg) {
    console.error(`validate: ${msg}\nusage: node validate.mjs --env-table FILE --schemas DIR ` +
        `[--external Kind/name ...] [--require-image-tags] [--label TEXT] ` +
        `[--dump-runs DIR] FILE.yaml ...`);
    process.exit(2);
}

// --- the MCPQ_* table ----------------------------------------------------------------------------
// | `MCPQ_X` | `--flag` | `default` | ingress worker | meaning |
const TABLE = new Map();
for (const line of fs.readFileSync(opts.envTable, "utf8").split("\n")) {
    const m = line.match(/^\|\s*`(MCPQ_[A-Z0-9_]+)`\s*\|[^|]*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|/);
    if (!m) continue;
    const def = m[2].replace(/`/g, "");
    TABLE.set(m[1], { def: def === "—" ? undefined : def, usedBy: m[3].split(/\s+/).filter(Boolean) });
}
// MCPQ_KAFKA_PROP_<NAME> and MCPQ_KAFKA_PROP_<NAME>_FILE set one librdkafka property each (over
// MCPQ_KAFKA_PROPERTIES): a family of names, read by whoever reads MCPQ_KAFKA_PROPERTIES.
const ENV = {
    get: (n) => TABLE.get(n) ?? (/^MCPQ_KAFKA_PROP_[A-Z0-9_]+$/.test(n) && TABLE.has("MCPQ_KAFKA_PROPERTIES")
        ? { def: undefined, usedBy: TABLE.get("MCPQ_KAFKA_PROPERTIES").usedBy } : undefined),
    has: (n) => ENV.get(n) !== undefined,
};
if (ENV.size === 0) usage(`no MCPQ_ variables in ${opts.envTable}`);

// --- the mcpq config schema ---------------------------------------------------------------------
const ajv = new Ajv2020({ allErrors: true, strict: false });
for (const f of fs.readdirSync(opts.schemas).filter((f) => f.endsWith(".schema.json")))
    ajv.addSchema(JSON.parse(fs.readFileSync(path.join(opts.schemas, f), "utf8")), f);
const validateConfig = ajv.getSchema("config.schema.json");

// --- load ----------------------------------------------------------------------------------------
const objects = [];
for (const file of opts.files) {
    for (const doc of parseAllDocuments(fs.readFileSync(file, "utf8"))) {
        if (doc.errors.length) {
            objects.push({ file, parseError: doc.errors.map((e) => e.message).join("; ") });
            continue;
        }
        const obj = doc.toJS();
        // kustomize folds long base64 values of a Secret's data over several lines; the API
        // server's base64 decoding (Go's encoding/base64) ignores the line breaks, so do we.
        if (obj?.kind === "Secret" && obj.data && typeof obj.data === "object")
            for (const [k, v] of Object.entries(obj.data))
                if (typeof v === "string") obj.data[k] = v.replace(/[\r\n]/g, "");
        if (obj !== null && obj !== undefined) objects.push({ file, obj });
    }
}

// --- schema models -------------------------------------------------------------------------------
const CRD_PACKAGES = {
    "keda.sh": "@kubernetes-models/keda/keda.sh",
    "monitoring.coreos.com": "@kubernetes-models/prometheus-operator/monitoring.coreos.com",
};
const modelCache = new Map();
async function modelFor(apiVersion, kind) {
    const key = `${apiVersion}/${kind}`;
    if (modelCache.has(key)) return modelCache.get(key);
    const slash = apiVersion.indexOf("/");
    const group = slash < 0 ? "" : apiVersion.slice(0, slash);
    const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
    const specs = group === "" ? [`kubernetes-models/${version}`]
        : [`kubernetes-models/${group}/${version}`];
    if (CRD_PACKAGES[group]) specs.push(`${CRD_PACKAGES[group]}/${version}`);
    let found = null;
    for (const spec of specs) {
        let mod;
        try {
            mod = await import(spec);
        } catch {
            continue;
        }
        found = Object.values(mod).find((c) => typeof c === "function" && c.kind === kind &&
            c.apiVersion === apiVersion) || null;
        if (found) break;
    }
    modelCache.set(key, found);
    return found;
}

// Runs the model's validator on a proxy of obj that records which keys of which object the
// validator read. Returns [schema errors, unknown fields].
function schemaCheck(Model, obj) {
    const reads = new Map();
    const proxies = new WeakMap();
    const wrap = (v) => {
        if (v === null || typeof v !== "object") return v;
        if (proxies.has(v)) return proxies.get(v);
        const p = new Proxy(v, {
            get(t, k, r) {
                if (typeof k === "string") {
                    let s = reads.get(t);
                    if (!s) reads.set(t, (s = new Set()));
                    s.add(k);
                }
                return wrap(Reflect.get(t, k, r));
            },
        });
        proxies.set(v, p);
        return p;
    };
    try {
        Model.prototype.validate.call(wrap(obj));
    } catch (e) {
        return [[e.message], []];
    }
    const unknown = [];
    const walk = (v, at) => {
        if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at}[${i}]`));
        else if (v && typeof v === "object") {
            const seen = reads.get(v); // never read: a free-form object (a map, preserved fields)
            for (const k of Object.keys(v)) {
                if (seen && !seen.has(k)) unknown.push(`${at}.${k}`);
                else walk(v[k], `${at}.${k}`);
            }
        }
    };
    walk(obj, "");
    return [[], unknown.map((f) => `unknown field ${f.slice(1)}`)];
}

// --- helpers ------------------------------------------------------------------------------------
const errors = new Map(); // object id -> [messages]
const idOf = (o) => `${o.kind}/${o.metadata?.name ?? "?"}`;
const fail = (o, msg) => {
    const id = typeof o === "string" ? o : idOf(o);
    if (!errors.has(id)) errors.set(id, []);
    errors.get(id).push(msg);
};
const valid = objects.filter((x) => x.obj && typeof x.obj === "object").map((x) => x.obj);
const nsOf = (o) => o.metadata?.namespace ?? "";
const find = (kind, name, ns) => valid.find((o) => o.kind === kind && o.metadata?.name === name &&
    nsOf(o) === ns);
const external = (kind, name) => opts.external.has(`${kind}/${name}`);
const matches = (selector, labels) => selector && Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([k, v]) => labels?.[k] === v);
const WORKLOADS = ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"];
const workloads = valid.filter((o) => WORKLOADS.includes(o.kind));
const podLabels = (w) => w.spec?.template?.metadata?.labels ?? {};
const containersOf = (w) => [...(w.spec?.template?.spec?.initContainers ?? []),
    ...(w.spec?.template?.spec?.containers ?? [])];
const binaryOf = (c) => (["ingress", "worker", "devbroker"].includes(c.name) ? c.name : null);
// A listen address's host ("0.0.0.0", "[::]", "") and port; the hosts reachable from outside.
const splitListen = (l) => ({ host: l.slice(0, l.lastIndexOf(":")), port: Number(l.slice(l.lastIndexOf(":") + 1)) });
const REACHABLE = ["0.0.0.0", "[::]", "", "*"];
// The container port a probe, Service targetPort or monitor endpoint means (a number or a name).
const containerPortOf = (c, p) => (typeof p === "number" ? p
    : /^[0-9]+$/.test(p ?? "") ? Number(p) : (c.ports ?? []).find((x) => x.name === p)?.containerPort);

// The value of an env var in a container: inline value, or a literal from an envFrom ConfigMap
// (null when it comes from elsewhere, undefined when unset).
function envValue(o, c, name) {
    const e = (c.env ?? []).find((x) => x.name === name);
    if (e) return e.value ?? null;
    for (const src of c.envFrom ?? []) {
        if (src.configMapRef) {
            const cm = find("ConfigMap", src.configMapRef.name, nsOf(o));
            const v = cm?.data?.[(src.prefix ?? "") === "" ? name : name.slice(src.prefix.length)];
            if (v !== undefined) return v;
        } else if (src.secretRef) {
            const s = find("Secret", src.secretRef.name, nsOf(o));
            if (s && (s.data?.[name] !== undefined || s.stringData?.[name] !== undefined))
                return null;
        }
    }
    return undefined;
}
const envOrDefault = (o, c, name) => envValue(o, c, name) ?? ENV.get(name)?.def;
// An ingress container's ports: the clients' (MCPQ_LISTEN) and the operations one, which is
// MCPQ_OPS_LISTEN's when set (split), else the same.
function ingressPorts(o, c) {
    const pub = splitListen(envOrDefault(o, c, "MCPQ_LISTEN") ?? "").port;
    const ops = envOrDefault(o, c, "MCPQ_OPS_LISTEN") ?? "";
    return { pub, ops: ops ? splitListen(ops).port : pub, split: !!ops };
}
// The ingress containers of the pod templates a selector matches, with their workload.
const ingressesOf = (targets) => targets.flatMap((w) => containersOf(w)
    .filter((c) => binaryOf(c) === "ingress").map((c) => ({ w, c, ports: ingressPorts(w, c) })));
function envNames(o, c) {
    const names = new Set((c.env ?? []).map((e) => e.name));
    for (const src of c.envFrom ?? []) {
        const ref = src.configMapRef ?? src.secretRef;
        const obj = ref && find(src.configMapRef ? "ConfigMap" : "Secret", ref.name, nsOf(o));
        for (const k of Object.keys({ ...obj?.data, ...obj?.stringData }))
            names.add((src.prefix ?? "") + k);
    }
    return names;
}
const secretOrConfigMapKeys = (obj) => new Set(Object.keys({ ...obj?.data, ...obj?.stringData,
    ...obj?.binaryData }));
function checkKeyRef(o, where, kind, ref) {
    if (!ref?.name) return fail(o, `${where}: ${kind} reference without a name`);
    const target = find(kind, ref.name, nsOf(o));
    if (!target) {
        if (!external(kind, ref.name) && !ref.optional)
            fail(o, `${where}: ${kind} ${ref.name} is not in the manifests (pass --external ${kind}/${ref.name} if it is created outside them)`);
        return;
    }
    if (ref.key !== undefined && !secretOrConfigMapKeys(target).has(ref.key) && !ref.optional)
        fail(o, `${where}: ${kind} ${ref.name} has no key ${ref.key}`);
}

// The value of an env var as the pod would see it, when the manifests hold it: inline, from a
// rendered ConfigMap or Secret (env or envFrom), or the pod's own name or namespace. undefined
// when unset, null when set from outside the manifests.
function resolveEnv(o, c, name) {
    const decode = (s, k) => (s.stringData?.[k] !== undefined ? s.stringData[k]
        : s.data?.[k] !== undefined ? Buffer.from(s.data[k], "base64").toString("utf8") : undefined);
    const e = (c.env ?? []).find((x) => x.name === name);
    if (e) {
        if (e.value !== undefined) return e.value;
        const vf = e.valueFrom ?? {};
        if (vf.secretKeyRef) {
            const sec = find("Secret", vf.secretKeyRef.name, nsOf(o));
            return sec ? decode(sec, vf.secretKeyRef.key) ?? null : null;
        }
        if (vf.configMapKeyRef)
            return find("ConfigMap", vf.configMapKeyRef.name, nsOf(o))?.data?.[vf.configMapKeyRef.key] ?? null;
        if (vf.fieldRef?.fieldPath === "metadata.name") return `${o.metadata.name}-0`;
        if (vf.fieldRef?.fieldPath === "metadata.namespace") return nsOf(o) || "default";
        return null;
    }
    for (const src of c.envFrom ?? []) {
        const pre = src.prefix ?? "";
        if (!name.startsWith(pre)) continue;
        const k = name.slice(pre.length);
        if (src.configMapRef) {
            const v = find("ConfigMap", src.configMapRef.name, nsOf(o))?.data?.[k];
            if (v !== undefined) return v;
        } else if (src.secretRef) {
            const sec = find("Secret", src.secretRef.name, nsOf(o));
            const v = sec && decode(sec, k);
            if (v !== undefined) return v;
        }
    }
    return undefined;
}

// The volume a container mounts path on (the longest mountPath that holds it), or undefined.
function volumeOfPath(o, c, file) {
    const vols = new Map((o.spec.template.spec.volumes ?? []).map((v) => [v.name, v]));
    let best;
    for (const m of c.volumeMounts ?? [])
        if (file.startsWith(m.mountPath.replace(/\/?$/, "/")) &&
            (!best || m.mountPath.length > best.mountPath.length)) best = m;
    return best && vols.get(best.name);
}
// 1 when a Secret volume that is not in the manifests holds the file at path.
const onExternalSecret = (o, c, file) => {
    const v = volumeOfPath(o, c, file);
    const names = v?.secret ? [v.secret.secretName]
        : (v?.projected?.sources ?? []).filter((x) => x.secret).map((x) => x.secret.name);
    return names.some((n) => n && !find("Secret", n, nsOf(o)));
};

function dumpRun(o, c, bin, configText, configEnv) {
    const dir = path.join(opts.dumpRuns, `${o.kind}-${o.metadata.name}-${c.name}`);
    fs.mkdirSync(dir, { recursive: true });
    const names = new Set([...envNames(o, c)].filter((n) => n.startsWith("MCPQ_")));
    for (const n of configEnv) names.add(n);
    const env = [];
    const unresolved = [];
    const secretFiles = [];
    for (const n of [...names].sort()) {
        const v = resolveEnv(o, c, n);
        // A config *_env name nothing in the manifests sets: from an external Secret's envFrom.
        if (v === undefined && configEnv.includes(n)) unresolved.push(n);
        if (v === undefined) continue;
        if (v === null || /[\n\0]/.test(v)) unresolved.push(n);
        else env.push(`${n}=${v}`);
        if (typeof v === "string" && v.startsWith("/") && onExternalSecret(o, c, v))
            secretFiles.push(`${n}=${v}`);
    }
    fs.writeFileSync(path.join(dir, "binary"), `mcpq-${bin}\n`);
    fs.writeFileSync(path.join(dir, "env"), env.map((l) => `${l}\n`).join(""));
    fs.writeFileSync(path.join(dir, "unresolved"), unresolved.map((l) => `${l}\n`).join(""));
    fs.writeFileSync(path.join(dir, "secretfiles"), secretFiles.map((l) => `${l}\n`).join(""));
    if (configText !== undefined) fs.writeFileSync(path.join(dir, "mcpq.json"), configText);
}

// --- per-object checks -------------------------------------------------------------------------
function checkPodTemplate(o) {
    const spec = o.spec?.template?.spec;
    if (!spec) return fail(o, "no spec.template.spec");
    if (!matches(o.spec.selector?.matchLabels, podLabels(o)))
        fail(o, "spec.selector.matchLabels does not match spec.template.metadata.labels");
    const psc = spec.securityContext ?? {};
    if (spec.terminationGracePeriodSeconds === undefined)
        fail(o, "terminationGracePeriodSeconds is not set (the drain budget)");
    const volumes = new Map();
    for (const v of spec.volumes ?? []) {
        const sources = Object.keys(v).filter((k) => k !== "name");
        if (sources.length !== 1)
            fail(o, `volume ${v.name}: exactly one source expected, got ${sources.join(", ") || "none"}`);
        volumes.set(v.name, v);
        if (v.configMap) checkKeyRef(o, `volume ${v.name}`, "ConfigMap", { name: v.configMap.name, optional: v.configMap.optional });
        if (v.secret) checkKeyRef(o, `volume ${v.name}`, "Secret", { name: v.secret.secretName, optional: v.secret.optional });
        if (v.persistentVolumeClaim) {
            const n = v.persistentVolumeClaim.claimName;
            if (!find("PersistentVolumeClaim", n, nsOf(o)) && !external("PersistentVolumeClaim", n))
                fail(o, `volume ${v.name}: PersistentVolumeClaim ${n} is not in the manifests`);
        }
    }
    for (const c of containersOf(o)) {
        const at = `container ${c.name}`;
        const csc = c.securityContext ?? {};
        if (!c.image) fail(o, `${at}: no image`);
        else if (opts.requireTags && !/@sha256:[0-9a-f]{64}$/.test(c.image)) {
            const tag = c.image.match(/:([^/:]+)$/)?.[1];
            if (!tag || tag === "latest")
                fail(o, `${at}: image ${c.image} is not pinned to a tag or digest`);
        }
        if (!(csc.runAsNonRoot ?? psc.runAsNonRoot)) fail(o, `${at}: runAsNonRoot is not true`);
        if ((csc.runAsUser ?? psc.runAsUser) === 0) fail(o, `${at}: runs as uid 0`);
        if ((csc.seccompProfile ?? psc.seccompProfile)?.type !== "RuntimeDefault")
            fail(o, `${at}: seccompProfile is not RuntimeDefault`);
        if (csc.allowPrivilegeEscalation !== false) fail(o, `${at}: allowPrivilegeEscalation is not false`);
        if (csc.readOnlyRootFilesystem !== true) fail(o, `${at}: readOnlyRootFilesystem is not true`);
        if (!(csc.capabilities?.drop ?? []).includes("ALL")) fail(o, `${at}: capabilities.drop lacks ALL`);
        if (csc.privileged) fail(o, `${at}: privileged`);
        for (const k of ["requests", "limits"])
            for (const r of ["cpu", "memory"])
                if (c.resources?.[k]?.[r] === undefined) fail(o, `${at}: no resources.${k}.${r}`);
        const mounts = new Map();
        for (const m of c.volumeMounts ?? []) {
            if (!volumes.has(m.name)) fail(o, `${at}: volumeMount ${m.mountPath} names no volume ${m.name}`);
            mounts.set(m.mountPath, m);
        }
        if (!mounts.has("/tmp")) fail(o, `${at}: /tmp is not a volume (the root filesystem is read-only)`);

        // env and envFrom references
        for (const e of c.env ?? []) {
            if (e.valueFrom?.secretKeyRef) checkKeyRef(o, `${at} env ${e.name}`, "Secret", e.valueFrom.secretKeyRef);
            if (e.valueFrom?.configMapKeyRef) checkKeyRef(o, `${at} env ${e.name}`, "ConfigMap", e.valueFrom.configMapKeyRef);
        }
        for (const src of c.envFrom ?? []) {
            if (src.configMapRef) checkKeyRef(o, `${at} envFrom`, "ConfigMap", { name: src.configMapRef.name, optional: src.configMapRef.optional });
            if (src.secretRef) checkKeyRef(o, `${at} envFrom`, "Secret", { name: src.secretRef.name, optional: src.secretRef.optional });
        }

        // probes name ports the container has
        const ports = c.ports ?? [];
        const portOk = (p) => (typeof p === "number" ? ports.some((x) => x.containerPort === p)
            : ports.some((x) => x.name === p));
        for (const probe of ["readinessProbe", "livenessProbe", "startupProbe"]) {
            const hg = c[probe]?.httpGet;
            if (hg && !portOk(hg.port)) fail(o, `${at}: ${probe} port ${hg.port} is not a container port`);
        }

        const bin = binaryOf(c);
        if (!bin) continue;
        checkMcpq(o, c, bin, at, mounts, volumes);
    }
}

function checkMcpq(o, c, bin, at, mounts, volumes) {
    // The image holds the three binaries and runs mcpq-ingress unless told otherwise
    // (deploy/docker/Dockerfile): args (or command) must name the container's binary.
    const argv = [...(c.command ?? []), ...(c.args ?? [])];
    const runs = argv.find((a) => /(^|\/)mcpq-[a-z]+$/.test(a));
    if (runs !== `/usr/local/bin/mcpq-${bin}`)
        fail(o, `${at}: runs ${runs ?? "the image's default command"}, not its binary: ` +
            `set args: ["/usr/local/bin/mcpq-${bin}"]`);
    // MCPQ_* names: each one real, and read by this binary when set inline.
    for (const e of c.env ?? []) {
        if (!e.name.startsWith("MCPQ_")) continue;
        const known = ENV.get(e.name);
        if (!known) fail(o, `${at}: ${e.name} is not an mcpq setting (mcpq-ingress --env-table)`);
        else if (!known.usedBy.includes(bin)) fail(o, `${at}: mcpq-${bin} does not read ${e.name} (read by: ${known.usedBy.join(", ")})`);
    }
    for (const src of c.envFrom ?? []) {
        const cm = src.configMapRef && find("ConfigMap", src.configMapRef.name, nsOf(o));
        for (const k of Object.keys(cm?.data ?? {}))
            if (k.startsWith("MCPQ_") && !ENV.has(k))
                fail(o, `${at}: ConfigMap ${cm.metadata.name} sets ${k}, which is not an mcpq setting`);
    }
    const grace = o.spec.template.spec.terminationGracePeriodSeconds ?? 30;
    if (bin === "ingress") {
        const listen = envOrDefault(o, c, "MCPQ_LISTEN") ?? "";
        const { host, port } = splitListen(listen);
        if (!REACHABLE.includes(host))
            fail(o, `${at}: MCPQ_LISTEN=${listen} is not reachable from outside the pod (use 0.0.0.0:<port> or [::]:<port>)`);
        if (!(c.ports ?? []).some((p) => p.containerPort === port))
            fail(o, `${at}: MCPQ_LISTEN port ${port} is not a container port`);
        const ops = envOrDefault(o, c, "MCPQ_OPS_LISTEN") ?? "";
        if (ops) {
            const l = splitListen(ops);
            if (!REACHABLE.includes(l.host))
                fail(o, `${at}: MCPQ_OPS_LISTEN=${ops} is not reachable from outside the pod (use 0.0.0.0:<port> or [::]:<port>)`);
            if (!(c.ports ?? []).some((p) => p.containerPort === l.port))
                fail(o, `${at}: MCPQ_OPS_LISTEN port ${l.port} is not a container port`);
            if (l.port === port) fail(o, `${at}: MCPQ_OPS_LISTEN and MCPQ_LISTEN have the same port ${port}`);
        }
        const opsPort = ingressPorts(o, c).ops;
        const probe = (name, pathWanted) => {
            const hg = c[name]?.httpGet;
            if (!hg || hg.path !== pathWanted) fail(o, `${at}: ${name} is not an httpGet of ${pathWanted}`);
            else if (containerPortOf(c, hg.port) !== opsPort)
                fail(o, `${at}: ${name} is on port ${hg.port}, but ${pathWanted} is served on ${ops ? "MCPQ_OPS_LISTEN" : "MCPQ_LISTEN"}'s port ${opsPort}${ops ? " (404 on the clients' port)" : ""}`);
        };
        probe("readinessProbe", "/readyz");
        probe("livenessProbe", "/healthz");
        // The drain: /readyz fails for MCPQ_DRAIN_DELAY_MS while still serving, then in-flight
        // calls get MCPQ_SHUTDOWN_GRACE_MS; 5 s more for the last answers and the exit.
        const delayMs = Number(envOrDefault(o, c, "MCPQ_DRAIN_DELAY_MS") ?? 0);
        const graceMs = Number(envOrDefault(o, c, "MCPQ_SHUTDOWN_GRACE_MS"));
        if (!(delayMs + graceMs + 5000 <= grace * 1000))
            fail(o, `${at}: MCPQ_DRAIN_DELAY_MS ${delayMs} + MCPQ_SHUTDOWN_GRACE_MS ${graceMs} + 5 s does not fit in terminationGracePeriodSeconds ${grace}`);
        const [text, refs] = checkConfigFile(o, c, at, mounts, volumes) ?? [];
        if (opts.dumpRuns) dumpRun(o, c, bin, text, refs ?? []);
    }
    if (bin === "worker") {
        const ms = Number(envOrDefault(o, c, "MCPQ_SHUTDOWN_GRACE_MS"));
        if (!(ms < grace * 1000))
            fail(o, `${at}: MCPQ_SHUTDOWN_GRACE_MS ${ms} does not fit in terminationGracePeriodSeconds ${grace}`);
        // The worker serves HTTP only with MCPQ_METRICS_LISTEN set (/metrics, /healthz, /readyz).
        const listen = envOrDefault(o, c, "MCPQ_METRICS_LISTEN") ?? "";
        if (!listen) {
            if (c.livenessProbe?.httpGet || c.readinessProbe?.httpGet)
                fail(o, `${at}: mcpq-worker serves no HTTP without MCPQ_METRICS_LISTEN, an httpGet probe can never pass`);
        } else {
            const { host, port } = splitListen(listen);
            if (!REACHABLE.includes(host))
                fail(o, `${at}: MCPQ_METRICS_LISTEN=${listen} is not reachable from outside the pod (use 0.0.0.0:<port> or [::]:<port>)`);
            if (!(c.ports ?? []).some((p) => p.containerPort === port && p.name === "metrics"))
                fail(o, `${at}: MCPQ_METRICS_LISTEN port ${port} is not the container port named metrics`);
            for (const [name, pathWanted] of [["readinessProbe", "/readyz"], ["livenessProbe", "/healthz"]]) {
                const hg = c[name]?.httpGet;
                if (hg && hg.path !== pathWanted) fail(o, `${at}: ${name} should be an httpGet of ${pathWanted}`);
            }
        }
        if (opts.dumpRuns) dumpRun(o, c, bin, undefined, []);
    }
}

// MCPQ_CONFIG: the file comes from a ConfigMap volume; validate it and its *_env references.
function checkConfigFile(o, c, at, mounts, volumes) {
    const file = envValue(o, c, "MCPQ_CONFIG");
    if (!file) return;
    // The file is under a directory mount, or is itself a subPath mount of one key.
    const mount = [...mounts.values()].find((m) =>
        file.startsWith(m.mountPath.replace(/\/?$/, "/")) || (m.subPath && file === m.mountPath));
    const vol = mount && volumes.get(mount.name);
    if (!vol?.configMap) return fail(o, `${at}: MCPQ_CONFIG ${file} is not on a ConfigMap volume`);
    // Kubelet updates a ConfigMap volume by swapping its ..data symlink, never a subPath mount:
    // a watched file there would never change (docs/config-file.md, "Watching the file").
    if (Number(envValue(o, c, "MCPQ_CONFIG_WATCH_MS") ?? 0) > 0 && mount.subPath)
        fail(o, `${at}: MCPQ_CONFIG_WATCH_MS is set but ${file} is a subPath mount, which kubelet never updates`);
    let key = file === mount.mountPath ? mount.subPath : file.slice(mount.mountPath.replace(/\/?$/, "/").length);
    const item = (vol.configMap.items ?? []).find((i) => i.path === key);
    if (item) key = item.key;
    const cm = find("ConfigMap", vol.configMap.name, nsOf(o));
    if (!cm) return; // reported with the volume
    const text = cm.data?.[key];
    if (text === undefined) return fail(o, `${at}: MCPQ_CONFIG ${file}: ConfigMap ${cm.metadata.name} has no key ${key}`);
    let config;
    try {
        config = JSON.parse(text);
    } catch (e) {
        return fail(cm, `${key}: not JSON: ${e.message}`);
    }
    if (!validateConfig(config))
        for (const e of validateConfig.errors)
            fail(cm, `${key}: ${e.instancePath || "/"} ${e.message} (schemas/config.schema.json)`);
    const names = envNames(o, c);
    const refs = [];
    const walk = (v, at2) => {
        if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${at2}[${i}]`));
        else if (v && typeof v === "object")
            for (const [k, x] of Object.entries(v)) {
                if (/_env$/.test(k) && typeof x === "string") refs.push([`${at2}.${k}`, x]);
                else walk(x, `${at2}.${k}`);
            }
    };
    walk(config, "");
    // A Secret created outside the manifests and read whole by envFrom may hold any name: those
    // the manifests do not set are taken to come from it (the start check then skips the file).
    const fromExternal = (c.envFrom ?? []).map((x) => x.secretRef?.name)
        .filter((n) => n && !find("Secret", n, nsOf(o)) && external("Secret", n));
    for (const [where, name] of refs)
        if (!names.has(name) && fromExternal.length === 0)
            fail(o, `${at}: the config file's ${where.slice(1)} names ${name}, which the container does not set`);
    return [text, refs.map(([, name]) => name)];
}

function checkService(o) {
    const sel = o.spec?.selector;
    if (!sel) return;
    const targets = workloads.filter((w) => nsOf(w) === nsOf(o) && matches(sel, podLabels(w)));
    if (targets.length === 0) return fail(o, "selector matches no pod template");
    for (const p of o.spec.ports ?? []) {
        if (typeof p.targetPort !== "string") continue;
        const has = targets.some((w) => containersOf(w).some((c) => (c.ports ?? []).some((x) => x.name === p.targetPort)));
        if (!has) fail(o, `port ${p.name ?? p.port}: targetPort ${p.targetPort} is no container port of the selected pods`);
    }
    if (!o.spec.ports?.length && o.spec.clusterIP !== "None") fail(o, "a Service without ports must be headless");
    // The operations port stays off the Service that faces clients.
    for (const { w, c, ports } of ingressesOf(targets)) {
        if (!ports.split) continue;
        const exposed = (o.spec.ports ?? []).map((p) => containerPortOf(c, p.targetPort ?? p.port));
        if (exposed.includes(ports.ops) && exposed.includes(ports.pub))
            fail(o, `exposes ${idOf(w)}'s ops port ${ports.ops} (MCPQ_OPS_LISTEN: /metrics, /admin) together with its clients' port ${ports.pub}: give the ops port a Service of its own`);
    }
}

function checkScaleTarget(o, ref, defaultKind) {
    const kind = ref?.kind ?? defaultKind;
    const t = ref && find(kind, ref.name, nsOf(o));
    if (!t) fail(o, `scaleTargetRef ${kind}/${ref?.name} is not in the manifests`);
    return t;
}

function checkScaledObject(o) {
    const t = checkScaleTarget(o, o.spec?.scaleTargetRef, "Deployment");
    if (!((o.spec?.minReplicaCount ?? 0) >= 1)) fail(o, "minReplicaCount must be at least 1");
    if (t && valid.some((h) => h.kind === "HorizontalPodAutoscaler" && nsOf(h) === nsOf(o) &&
        h.spec?.scaleTargetRef?.name === t.metadata.name))
        fail(o, `${idOf(t)} is also the target of a HorizontalPodAutoscaler`);
    for (const [i, tr] of (o.spec?.triggers ?? []).entries()) {
        if (tr.type !== "kafka") continue;
        const m = tr.metadata ?? {};
        const at = `triggers[${i}]`;
        if (m.lagThreshold === undefined) fail(o, `${at}: no lagThreshold`);
        const c = t && containersOf(t).find((x) => binaryOf(x) === "worker");
        if (!c) {
            if (t) fail(o, `${at}: ${idOf(t)} has no worker container`);
            continue;
        }
        const want = {
            bootstrapServers: envOrDefault(t, c, "MCPQ_KAFKA_BROKERS"),
            topic: envOrDefault(t, c, "MCPQ_TOPIC_JOBS"),
            consumerGroup: envOrDefault(t, c, "MCPQ_GROUP_ID"),
        };
        for (const [k, v] of Object.entries(want))
            if (m[k] !== v) fail(o, `${at}: ${k} is ${m[k] ?? "unset"}, but the worker's is ${v}`);
    }
}

function checkServiceMonitor(o) {
    const sel = o.spec?.selector?.matchLabels;
    const svcs = valid.filter((s) => s.kind === "Service" && nsOf(s) === nsOf(o) && matches(sel, s.metadata?.labels));
    if (svcs.length === 0) return fail(o, "selector matches no Service");
    for (const ep of o.spec.endpoints ?? []) {
        if (ep.port && !svcs.some((s) => (s.spec?.ports ?? []).some((p) => p.name === ep.port)))
            fail(o, `endpoint port ${ep.port} is not a port name of the selected Services`);
        // An ingress serves /metrics only on its ops port.
        for (const s of svcs) {
            const sp = (s.spec?.ports ?? []).find((p) => p.name === ep.port);
            if (!sp || !s.spec?.selector) continue;
            const targets = workloads.filter((w) => nsOf(w) === nsOf(s) && matches(s.spec.selector, podLabels(w)));
            for (const { w, c, ports } of ingressesOf(targets))
                if (containerPortOf(c, sp.targetPort ?? sp.port) !== ports.ops)
                    fail(o, `endpoint port ${ep.port} reaches ${idOf(w)} on port ${containerPortOf(c, sp.targetPort ?? sp.port)}, but its /metrics is on port ${ports.ops}`);
        }
    }
}

// PodMonitor: its selector matches pod templates whose containers have the named port.
function checkPodMonitor(o) {
    const sel = o.spec?.selector?.matchLabels;
    const exprs = o.spec?.selector?.matchExpressions ?? [];
    const exprOk = (labels) => exprs.every((e) =>
        e.operator === "In" ? (e.values ?? []).includes(labels[e.key])
            : e.operator === "NotIn" ? !(e.values ?? []).includes(labels[e.key])
                : e.operator === "Exists" ? e.key in labels : !(e.key in labels));
    const pods = workloads.filter((w) => nsOf(w) === nsOf(o) && matches(sel, podLabels(w)) &&
        exprOk(podLabels(w)));
    if (pods.length === 0) return fail(o, "selector matches no pod template");
    for (const want of exprs.filter((e) => e.operator === "In").flatMap((e) => e.values.map((v) => [e.key, v])))
        if (!pods.some((w) => podLabels(w)[want[0]] === want[1]))
            fail(o, `selector names ${want[0]}=${want[1]}, which no pod template has`);
    for (const ep of o.spec.podMetricsEndpoints ?? [])
        for (const w of pods)
            if (ep.port && !containersOf(w).some((c) => (c.ports ?? []).some((p) => p.name === ep.port)))
                fail(o, `endpoint port ${ep.port} is not a container port name of ${idOf(w)}`);
            else for (const { c, ports } of ingressesOf([w]))
                if (ep.port && containerPortOf(c, ep.port) !== ports.ops)
                    fail(o, `endpoint port ${ep.port} of ${idOf(w)} is not its /metrics port ${ports.ops}`);
}

// --- run ----------------------------------------------------------------------------------------
// --no-plaintext-secrets: a name that says secret never has a literal value in the manifests.
const SECRET_NAME = /(PASSWORD|SECRET|TOKEN|KEY)$/i;
const URL_PASSWORD = /^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*:[^/@\s]+@/i;
function checkPlaintextSecrets(o) {
    if (WORKLOADS.includes(o.kind))
        for (const c of containersOf(o))
            for (const e of c.env ?? []) {
                if (e.value === undefined) continue;
                if (SECRET_NAME.test(e.name))
                    fail(o, `container ${c.name}: env ${e.name} has a literal value: take it from a Secret (secretKeyRef, envFrom, or a *_FILE setting on a Secret volume)`);
                else if (URL_PASSWORD.test(e.value))
                    fail(o, `container ${c.name}: env ${e.name} holds a URL with a password: put the password in a Secret (MCPQ_REDIS_PASSWORD_FILE)`);
            }
    if (o.kind === "ConfigMap")
        for (const [k, v] of Object.entries(o.data ?? {})) {
            if (SECRET_NAME.test(k)) fail(o, `key ${k} looks like a secret: a ConfigMap is no place for it (use a Secret)`);
            else if (typeof v === "string" && URL_PASSWORD.test(v)) fail(o, `key ${k} holds a URL with a password: put the password in a Secret`);
        }
}

const seen = new Set();
for (const x of objects) {
    if (x.parseError) {
        fail(`${x.file}`, `YAML: ${x.parseError}`);
        continue;
    }
    const o = x.obj;
    if (typeof o !== "object" || Array.isArray(o) || !o.apiVersion || !o.kind) {
        fail(`${x.file}`, "a document without apiVersion and kind");
        continue;
    }
    if (!o.metadata?.name) fail(o, "no metadata.name");
    const key = `${o.apiVersion}/${o.kind}/${nsOf(o)}/${o.metadata?.name}`;
    if (seen.has(key)) fail(o, "defined twice");
    seen.add(key);
    const Model = await modelFor(o.apiVersion, o.kind);
    if (!Model) {
        fail(o, `no schema for ${o.apiVersion} ${o.kind} in the validator's packages`);
        continue;
    }
    const [schemaErrors, unknown] = schemaCheck(Model, o);
    for (const e of [...schemaErrors, ...unknown]) fail(o, `schema ${o.apiVersion} ${o.kind}: ${e}`);
}
for (const o of valid) {
    if (!o.kind) continue;
    if (WORKLOADS.includes(o.kind)) checkPodTemplate(o);
    if (o.kind === "Service") checkService(o);
    if (o.kind === "HorizontalPodAutoscaler") checkScaleTarget(o, o.spec?.scaleTargetRef, "Deployment");
    if (o.kind === "PodDisruptionBudget" &&
        !workloads.some((w) => nsOf(w) === nsOf(o) && matches(o.spec?.selector?.matchLabels, podLabels(w))))
        fail(o, "selector matches no pod template");
    if (o.kind === "ScaledObject") checkScaledObject(o);
    if (o.kind === "ServiceMonitor") checkServiceMonitor(o);
    if (o.kind === "PodMonitor") checkPodMonitor(o);
    if (opts.noPlaintextSecrets) checkPlaintextSecrets(o);
    if (o.kind === "StatefulSet") {
        const svc = find("Service", o.spec?.serviceName, nsOf(o));
        if (!svc) fail(o, `serviceName ${o.spec?.serviceName} is not a Service in the manifests`);
        else if (svc.spec?.clusterIP !== "None") fail(o, `serviceName ${o.spec.serviceName} is not headless`);
    }
}

const label = opts.label ? `${opts.label}: ` : "";
let nerr = 0;
for (const o of valid.filter((v) => v.kind)) {
    const id = idOf(o);
    const errs = errors.get(id);
    if (!errs) console.log(`ok   ${label}${id} (${o.apiVersion})`);
}
for (const [id, errs] of errors) {
    for (const e of errs) console.log(`FAIL ${label}${id}: ${e}`);
    nerr += errs.length;
}
console.log(`${label}${valid.length} objects, ${nerr} errors`);
process.exit(nerr ? 1 : 0);
