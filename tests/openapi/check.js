// check.js DOC BASE TOKEN SCOPED_TOKEN SRC MAX_BODY - holds docs/openapi.json
// to the running keel serve at BASE (tests/http_openapi.sh starts it, with a
// token file holding TOKEN, for every tenant, and SCOPED_TOKEN, for another
// tenant than the examples', and --max-body MAX_BODY; tenant-00's fleet
// events posted) and to the server's source in SRC:
//  1. the document is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)
//     and is what the server serves at /v1/openapi.json, byte for byte;
//  2. every operation, called with its parameters' examples, is answered
//     with a status it documents, and a JSON answer matches that status's
//     schema (JSON Schema 2020-12, ajv); an HTML, script or text answer has
//     a documented media type;
//  3. the errors it documents are the ones it gives: no token 401, another
//     tenant's token 403, a bad parameter 400, a subject nobody named 404,
//     each a documented status with the Error schema;
//  4. every method a path does not document is 405, with Allow naming
//     exactly the documented ones and a body its operations' documented
//     405 describes;
//  5. paths next to the documented ones (a segment more, a literal
//     changed) are 404 unless a documented path matches them, with the
//     body of components.responses.NoSuchEndpoint;
//  6. the errors no example provokes, on every operation where they
//     apply: a request target over 8 KiB (414), header fields over 16 KiB
//     (431), a body over MAX_BODY (413), a Content-Type the server does not
//     read (415), each answered as its operation documents;
//  7. every query parameter the server reads (src/http: get_arg(c, "name")
//     or a lookup of an MHD_GET_ARGUMENT_KIND value) is a documented query
//     parameter, and every documented one is read.
// With the route table test (tests/test_http.c: the router's table is the
// document's paths), every route the server answers is in the document and
// every route in it is answered. Prints what failed; exits 1 on any.
'use strict';
const fs = require('fs');
const { Validator } = require('@seriousme/openapi-schema-validator');
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;

const [docPath, base, token, scoped, srcDir, maxBody] = process.argv.slice(2);
const docText = fs.readFileSync(docPath);
const doc = JSON.parse(docText);
let failures = 0;
const fail = (msg) => { failures++; console.log('FAIL: ' + msg); };
const METHODS = ['get', 'head', 'post', 'put', 'delete', 'patch', 'options'];

// Components' schemas as one JSON Schema, refs rewritten to it.
const ID = 'https://keel.invalid/openapi';
const rewrite = (s) => JSON.parse(JSON.stringify(s).replaceAll('"#/components/schemas/', '"' + ID + '#/$defs/'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: ID, $defs: rewrite(doc.components.schemas) });
const compiled = new Map();
const schemaCheck = (schema) => {
	const key = JSON.stringify(schema);
	if (!compiled.has(key))
		compiled.set(key, ajv.compile(rewrite(schema)));
	return compiled.get(key);
};
const deref = (x, kind) => x && x.$ref ? doc.components[kind][x.$ref.split('/').pop()] : x;

function templateMatches(template, path) {
	const t = template.split('/'), p = path.split('/');
	for (let i = 0; i < t.length; i++) {
		if (i >= p.length)
			return false;
		const param = t[i].startsWith('{');
		if (param && i === t.length - 1 && (template.startsWith('/ui/')))
			return p.slice(i).join('/').length > 0; // the page's {view} and {asset}: the rest
		if (param ? p[i] === '' : p[i] !== t[i])
			return false;
	}
	return t.length === p.length;
}

async function call(method, path, { auth = token, query = {}, body, type, extra = {} } = {}) {
	const url = new URL(base + path);
	for (const [k, v] of Object.entries(query))
		url.searchParams.set(k, String(v));
	const headers = { ...extra };
	if (auth)
		headers.Authorization = 'Bearer ' + auth;
	if (type)
		headers['Content-Type'] = type;
	const r = await fetch(url, { method: method.toUpperCase(), headers, body, redirect: 'manual' });
	const text = method === 'head' ? '' : await r.text();
	return { status: r.status, headers: r.headers, text };
}

// The request an operation's examples make: its path with the path
// parameters' examples, the query parameters that have one, the request
// body's first example.
function exampleRequest(path, op, only = 'all') {
	const params = (op.parameters || []).map((p) => deref(p, 'parameters'));
	let url = path;
	const query = {};
	for (const p of params) {
		if (p.in === 'path')
			url = url.replace('{' + p.name + '}', encodeURIComponent(p.example).replaceAll('%2F', '/'));
		else if (p.in === 'query' && p.example !== undefined && (only === 'all' || p.required))
			query[p.name] = p.example;
	}
	let body, type;
	const content = op.requestBody && op.requestBody.content;
	if (content)
		for (const [t, c] of Object.entries(content))
			if (c.example !== undefined && body === undefined) {
				body = JSON.stringify(c.example);
				type = t;
			}
	return { url, query, body, type, params };
}

// The response an operation documents for a status, or, with no operation,
// a component response.
function checkAnswer(what, op, r, component) {
	const documented = component ? { $ref: '#/components/responses/' + component } : op.responses[String(r.status)];
	if (!documented) {
		fail(`${what}: ${r.status} is not among its documented answers (${Object.keys(op.responses)}): ${r.text.slice(0, 300)}`);
		return;
	}
	const resp = deref(documented, 'responses');
	if (!resp) {
		fail(`${what}: ${documented.$ref} is not in the document`);
		return;
	}
	if (!resp.content || what.startsWith('HEAD'))
		return;
	const type = (r.headers.get('content-type') || '').split(';')[0].trim();
	const media = resp.content[type] || resp.content['*/*'];
	if (!media) {
		fail(`${what}: ${r.status} came as ${type}, documented as ${Object.keys(resp.content)}`);
		return;
	}
	if (type !== 'application/json' || !media.schema)
		return;
	let body;
	try {
		body = JSON.parse(r.text);
	} catch (e) {
		fail(`${what}: ${r.status} is not JSON: ${r.text.slice(0, 200)}`);
		return;
	}
	const v = schemaCheck(media.schema);
	if (!v(body))
		fail(`${what}: ${r.status} does not match its schema: ${ajv.errorsText(v.errors)}: ${r.text.slice(0, 400)}`);
}

async function main() {
	// 1. valid, and served as it is
	const validator = new Validator();
	const res = await validator.validate(doc);
	if (!res.valid)
		fail('not valid OpenAPI: ' + JSON.stringify(res.errors).slice(0, 2000));
	if (validator.version !== '3.1')
		fail('not OpenAPI 3.1 but ' + validator.version);
	const served = await call('get', '/v1/openapi.json', { auth: null });
	if (served.status !== 200 || served.text !== docText.toString('utf8'))
		fail(`/v1/openapi.json (${served.status}) is not docs/openapi.json`);

	// 2. every operation with its examples; DELETE last (it forgets)
	const ops = [];
	for (const [path, item] of Object.entries(doc.paths))
		for (const m of METHODS)
			if (item[m])
				ops.push([path, m, item[m]]);
	ops.sort((a, b) => (a[1] === 'delete') - (b[1] === 'delete'));
	let calls = 0;
	for (const [path, m, op] of ops) {
		const pub = Array.isArray(op.security) && op.security.length === 0;
		const ex = exampleRequest(path, op);
		for (const only of ['required', 'all']) {
			if (m === 'delete' && only === 'all')
				continue;
			const q = only === 'all' ? ex.query : exampleRequest(path, op, 'required').query;
			const r = await call(m, ex.url, { auth: pub ? null : token, query: q, body: ex.body, type: ex.type });
			calls++;
			checkAnswer(`${m.toUpperCase()} ${ex.url}?${new URLSearchParams(q)}`, op, r);
			if (r.status >= 400 && !(path.startsWith('/ui/assets') && r.status === 404))
				fail(`${m.toUpperCase()} ${ex.url} with its examples: ${r.status} ${r.text.slice(0, 300)}`);
		}
		// 3. its errors
		if (!pub) {
			const r = await call(m, ex.url, { auth: null, query: ex.query });
			checkAnswer(`${m.toUpperCase()} ${ex.url} without a token`, op, r);
			if (r.status !== 401)
				fail(`${m.toUpperCase()} ${ex.url} without a token: ${r.status}`);
		}
		if (path.includes('{tenant}') && m !== 'delete') {
			const r = await call(m, ex.url, { auth: scoped, query: ex.query });
			checkAnswer(`${m.toUpperCase()} ${ex.url} with another tenant's token`, op, r);
			if (r.status !== 403)
				fail(`${m.toUpperCase()} ${ex.url} with another tenant's token: ${r.status}`);
		}
		const timed = ex.params.find((p) => p.name === 'known_at' && p.in === 'query');
		if (timed && m !== 'head') {
			const r = await call(m, ex.url, { query: { ...ex.query, known_at: 'not-a-time' } });
			checkAnswer(`${m.toUpperCase()} ${ex.url} with a bad known_at`, op, r);
			if (r.status !== 400)
				fail(`${m.toUpperCase()} ${ex.url} with a bad known_at: ${r.status}`);
		}
		if (path.includes('{subject}') && m === 'get') {
			const url = ex.url.replace(encodeURIComponent('vehicle:V-0001'), 'nobody%3Ax');
			const r = await call(m, url, { query: ex.query });
			checkAnswer(`${m.toUpperCase()} ${url}`, op, r);
			if (r.status !== 404)
				fail(`${m.toUpperCase()} ${url}: ${r.status}`);
		}
	}

	// 4. undocumented methods: 405, Allow as documented
	for (const [path, item] of Object.entries(doc.paths)) {
		const ex = exampleRequest(path, item.get || item.post || item.delete);
		const want = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase()).sort().join(',');
		for (const m of METHODS.filter((m) => !item[m])) {
			const r = await call(m, ex.url);
			calls++;
			const allow = (r.headers.get('allow') || '').split(',').map((s) => s.trim()).sort().join(',');
			if (r.status !== 405 || allow !== want)
				fail(`${m.toUpperCase()} ${ex.url}: ${r.status}, Allow "${r.headers.get('allow')}", want 405 and ${want}`);
			// documented by each of the path's operations (a client
			// generator meets it there)
			for (const d of METHODS.filter((d) => item[d] && d !== 'head'))
				checkAnswer(`${m.toUpperCase()} ${ex.url} (${d.toUpperCase()}'s 405)`, item[d], r);
		}
	}

	// 5. neighbours: answered only when a documented path matches them
	const templates = Object.keys(doc.paths);
	const probes = new Set(['/', '/v1', '/v2/tenants', '/v1/tenants/', '/metrics/x', '/healthz/x', '/v1/openapi.yaml']);
	for (const [path, item] of Object.entries(doc.paths)) {
		const ex = exampleRequest(path, item.get || item.post || item.delete);
		probes.add(ex.url + '/nosuch');
		const segs = ex.url.split('/');
		for (let i = 1; i < segs.length; i++)
			if (!path.split('/')[i] || !path.split('/')[i].startsWith('{'))
				probes.add(segs.map((s, k) => (k === i ? 'nosuch' : s)).join('/'));
	}
	for (const p of probes) {
		const matched = templates.some((t) => templateMatches(t, p));
		const r = await call('get', p);
		calls++;
		if (matched && r.status === 404 && r.text.includes('no such endpoint'))
			fail(`GET ${p} matches a documented path but is "no such endpoint"`);
		if (!matched && !(r.status === 404 && r.text.includes('no such endpoint')))
			fail(`GET ${p} is no documented path, yet answered ${r.status} ${r.text.slice(0, 200)}`);
		if (!matched)
			checkAnswer(`GET ${p}`, null, r, 'NoSuchEndpoint');
	}

	// 6. the limits, on every operation: 414 and 431 are checked before
	// the route, the token or the method
	const long = 'x'.repeat(9000);
	for (const [path, m, op] of ops) {
		if (m === 'delete')
			continue;
		const ex = exampleRequest(path, op);
		const opts = { query: { ...ex.query, pad: long }, body: ex.body, type: ex.type };
		let r = await call(m, ex.url, opts);
		calls++;
		checkAnswer(`${m.toUpperCase()} ${ex.url} with a 9000-byte query`, op, r);
		if (r.status !== 414)
			fail(`${m.toUpperCase()} ${ex.url} with a 9000-byte query: ${r.status}, want 414`);
		const extra = { 'X-Pad-1': long, 'X-Pad-2': long };
		r = await call(m, ex.url, { query: ex.query, body: ex.body, type: ex.type, extra });
		calls++;
		checkAnswer(`${m.toUpperCase()} ${ex.url} with 18 KB of headers`, op, r);
		if (r.status !== 431)
			fail(`${m.toUpperCase()} ${ex.url} with 18 KB of headers: ${r.status}, want 431`);
	}
	// 413 and 415: the POST's own
	const post = doc.paths['/v1/events'].post;
	const big = '{}\n'.repeat(Math.floor(Number(maxBody) / 3) + 1);
	let r = await call('post', '/v1/events', { body: big, type: 'application/x-ndjson' });
	calls++;
	checkAnswer(`POST /v1/events of ${big.length} bytes`, post, r);
	if (r.status !== 413)
		fail(`POST /v1/events of ${big.length} bytes (--max-body ${maxBody}): ${r.status}, want 413`);
	r = await call('post', '/v1/events', { body: 'id,source\n1,/s\n', type: 'text/csv' });
	calls++;
	checkAnswer('POST /v1/events as text/csv', post, r);
	if (r.status !== 415)
		fail(`POST /v1/events as text/csv: ${r.status}, want 415`);

	// 7. the query parameters the server reads are the documented ones
	const read = new Set();
	for (const f of fs.readdirSync(srcDir + '/src/http').filter((f) => f.endsWith('.c'))) {
		const c = fs.readFileSync(srcDir + '/src/http/' + f, 'utf8');
		for (const m of c.matchAll(/\bget_arg\(\s*c\s*,\s*"([^"]+)"/g))
			read.add(m[1]);
		for (const m of c.matchAll(/MHD_GET_ARGUMENT_KIND\s*,\s*"([^"]+)"/g))
			read.add(m[1]);
	}
	if (!read.has('known_at') || read.size < 5)
		fail(`only ${[...read]} found read in src/http: the check no longer sees how parameters are read`);
	const documented = new Set();
	for (const [, , op] of ops)
		for (const p of (op.parameters || []).map((p) => deref(p, 'parameters')))
			if (p.in === 'query')
				documented.add(p.name);
	for (const n of read)
		if (!documented.has(n))
			fail(`query parameter "${n}": the server reads it, no operation documents it`);
	for (const n of documented)
		if (!read.has(n))
			fail(`query parameter "${n}": documented, the server never reads it`);
	console.log(`${calls} requests, ${ops.length} operations, ${templates.length} paths, ${failures} failures`);
	process.exit(failures ? 1 : 0);
}
main().catch((e) => {
	console.log('FAIL: ' + (e.stack || e));
	process.exit(1);
});
