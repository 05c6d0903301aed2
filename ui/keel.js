/*
 * keel.js - the page keel serve serves at /ui/ (docs/ui.md).
 *
 * One script for every view: it reads location.pathname and draws the
 * tenants, the finder of one tenant, or an entity's timeline, all from the
 * same /v1 API every other client uses, with the bearer token this tab
 * keeps in sessionStorage. Everything the API says goes into the page as
 * text (textContent, setAttribute), never as markup.
 *
 * The timeline is built once per answer: bars positioned in percent of a
 * wide inner element, so zooming is one CSS variable and a scroll, and no
 * bar is ever measured. A fact whose values are all numbers is drawn as a
 * step line over its bars, with its scale; one with few distinct values
 * gives each value its own colour, named in a legend.
 */
'use strict';

const TOKEN_KEY = 'keel.token';
const PAGE = 100; /* entities or subjects a page */
const TICK_SPACING_PX = 120;
const MAX_ZOOM = 20000;
const MIN_TEXT_PX = 36; /* a bar narrower than this gets no text (yet) */
const PALETTE = 12; /* colours for a fact's values: keel.css .v0 to .v11 */
const MIN_ROW_PX = 24; /* the first view: the rows of a busy lane at least this wide */
/* SVG's namespace, as the HTML parser gave it to the page's one <svg>
 * (so that the script names no URI: it reaches nothing but the API). */
const SVGNS = document.getElementById('svg-ns').namespaceURI;

const $ = (id) => document.getElementById(id);

/* ------------------------------------------------------------ utilities */

function el(tag, className, text) {
	const e = document.createElement(tag);
	if (className)
		e.className = className;
	if (text !== undefined && text !== null)
		e.textContent = text;
	return e;
}

function clear(node) {
	while (node.firstChild)
		node.removeChild(node.firstChild);
}

const enc = encodeURIComponent;

/* Milliseconds since the epoch of an RFC 3339 time (the API writes up
 * to microseconds; Date keeps milliseconds, plenty for drawing). */
function ms(t) {
	const v = Date.parse(t);
	return Number.isNaN(v) ? Date.parse(t.replace(/(\.\d{3})\d+/, '$1')) : v;
}

function iso(msec) {
	return new Date(msec).toISOString().replace('.000Z', 'Z');
}

/* A value as a person reads it on a bar: strings bare, the rest JSON. */
function valueText(v) {
	if (v === null)
		return 'unset';
	return typeof v === 'string' ? v : JSON.stringify(v);
}

/* A value as a bar shows it, shorter still: a flat object's members as
 * "name value" pairs ({"lat":1,"lon":2} is "lat 1, lon 2"). */
function barText(v) {
	if (v && typeof v === 'object' && !Array.isArray(v) &&
	    Object.values(v).every((x) => x === null || typeof x !== 'object'))
		return Object.entries(v).map(([k, x]) => k + ' ' + valueText(x)).join(', ');
	return valueText(v);
}

/* The API's canonical form of an event reference (member order source, id). */
function eventKey(ref) {
	return ref ? JSON.stringify({ source: ref.source, id: ref.id }) : '';
}

function eventText(ref) {
	return ref ? ref.id + ' from ' + ref.source : 'none (open)';
}

/* "loading" while anything is fetched or drawn, "ready" when nothing is:
 * the browser tests wait for "ready". */
let busy = 0;
function begin() {
	busy++;
	document.documentElement.dataset.state = 'loading';
}
function end() {
	busy = Math.max(0, busy - 1);
	if (busy === 0)
		document.documentElement.dataset.state = 'ready';
}

function showError(text) {
	const e = $('error');
	e.textContent = text || '';
	e.hidden = !text;
}

/* ------------------------------------------------------------------ API */

class NeedToken extends Error {}
class ApiError extends Error {
	constructor(status, message) {
		super(message);
		this.status = status;
	}
}

function token() {
	return sessionStorage.getItem(TOKEN_KEY);
}

function apiPath(path, params) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(params || {}))
		if (v !== undefined && v !== null && v !== '')
			q.set(k, v);
	const qs = q.toString();
	return qs ? path + '?' + qs : path;
}

async function api(path, params) {
	const headers = { Accept: 'application/json' };
	const t = token();
	if (t)
		headers.Authorization = 'Bearer ' + t;
	let r;
	try {
		r = await fetch(apiPath(path, params), {
			headers, cache: 'no-store', credentials: 'omit',
		});
	} catch (e) {
		/* fetch rejects only when no answer came at all. */
		throw new ApiError(0, 'no answer from the server (' + e.message +
			'): is keel serve still running? Try again once it is.');
	}
	let body = null;
	try {
		body = await r.json();
	} catch (e) {
		body = null;
	}
	const message = body && body.error ? body.error : r.statusText;
	if (r.status === 401)
		throw new NeedToken(t ? 'the token was refused (' + message + '): sign in again' : '');
	if (!r.ok)
		throw new ApiError(r.status, r.status + ': ' + message);
	return body;
}

function tenantPath(tenant) {
	return '/v1/tenants/' + enc(tenant);
}

function entityPath(tenant, subject) {
	return tenantPath(tenant) + '/entities/' + enc(subject);
}

/* --------------------------------------------------------------- routes */

function uiTenant(tenant) {
	return '/ui/tenants/' + enc(tenant);
}

function uiEntity(tenant, subject, at, knownAt) {
	return apiPath(uiTenant(tenant) + '/entities/' + enc(subject),
		{ at: at, known_at: knownAt });
}

/* The view the address names: {view, tenant, subject}. */
function parseRoute() {
	const parts = location.pathname.split('/').slice(2); /* after "/ui" */
	if (parts.length && parts[parts.length - 1] === '')
		parts.pop();
	let d;
	try {
		d = parts.map(decodeURIComponent);
	} catch (e) {
		return { view: 'unknown' };
	}
	if (d.length === 0)
		return { view: 'tenants' };
	if (d[0] === 'tenants' && d.length === 2)
		return { view: 'find', tenant: d[1] };
	if (d[0] === 'tenants' && d.length === 4 && d[2] === 'entities' && d[3] !== '')
		return { view: 'entity', tenant: d[1], subject: d[3] };
	return { view: 'unknown' };
}

function crumbs(r) {
	const nav = $('crumbs');
	clear(nav);
	const add = (text, href) => {
		const a = el(href ? 'a' : 'span', 'crumb', text);
		if (href)
			a.href = href;
		nav.appendChild(a);
	};
	add('Tenants', '/ui/');
	if (r.tenant)
		add(r.tenant, r.subject ? uiTenant(r.tenant) : null);
	if (r.subject)
		add(r.subject, null);
}

const VIEWS = ['sign-in', 'tenants-view', 'find-view', 'entity-view'];
function showView(id) {
	for (const v of VIEWS)
		$(v).hidden = v !== id;
}

let routeSeq = 0;
async function route() {
	const seq = ++routeSeq;
	begin();
	showError('');
	$('sign-out').hidden = !token();
	const r = parseRoute();
	crumbs(r);
	try {
		if (r.view === 'tenants')
			await tenantsView();
		else if (r.view === 'find')
			await findView(r.tenant);
		else if (r.view === 'entity')
			await entityView(r.tenant, r.subject);
		else {
			showView(null);
			showError('no such page: ' + location.pathname);
		}
	} catch (e) {
		if (seq === routeSeq)
			failed(e);
	} finally {
		end();
	}
}

/* What a failed request shows: the sign-in form for a 401, else the
 * error alone, never data of a view the answer refused. */
function failed(e) {
	if (e instanceof NeedToken) {
		sessionStorage.removeItem(TOKEN_KEY);
		$('sign-out').hidden = true;
		showView('sign-in');
		showError(e.message);
		$('token').focus();
		return;
	}
	showError(e instanceof ApiError ? e.message : 'error: ' + e.message);
}

/* -------------------------------------------------------------- tenants */

async function tenantsView() {
	/* /v1/tenants answers a page at a time: every page, the largest. */
	const tenants = [];
	let cursor = null;
	do {
		const page = await api('/v1/tenants', { limit: 1000, cursor });
		tenants.push(...page.tenants);
		cursor = page.next;
	} while (cursor);
	const doc = { tenants };
	const list = $('tenants');
	clear(list);
	for (const t of doc.tenants) {
		const li = el('li');
		const a = el('a', 'tenant', t);
		a.href = uiTenant(t);
		a.setAttribute('data-tenant', t);
		li.appendChild(a);
		list.appendChild(li);
	}
	$('tenants-empty').hidden = doc.tenants.length > 0;
	showView('tenants-view');
}

/* ----------------------------------------------------------------- find */

const find = { tenant: null, next: null, params: null, path: null };

async function findView(tenant) {
	find.tenant = tenant;
	$('find-title').textContent = 'Find in ' + tenant;
	const q = new URLSearchParams(location.search);
	for (const k of ['kind', 'prefix', 'predicate', 'value'])
		$(k).value = q.get(k) || '';
	clear($('entities'));
	$('more').hidden = true;
	$('entities-caption').textContent = '';
	showView('find-view');
	if (q.get('predicate') && q.has('value'))
		await findPage('search', { predicate: q.get('predicate'), value: q.get('value') }, true);
	else
		await findPage('entities', { kind: q.get('kind'), prefix: q.get('prefix') }, true);
}

/* One page of entities or search results, after the ones shown (or
 * instead of them when fresh). */
async function findPage(what, params, fresh) {
	const list = $('entities');
	if (fresh) {
		find.path = tenantPath(find.tenant) + '/' + what;
		find.params = params;
		find.next = null;
	}
	let doc;
	try {
		doc = await api(find.path, Object.assign({ limit: PAGE, cursor: find.next }, find.params));
	} catch (e) {
		clear(list);
		$('more').hidden = true;
		$('entities-caption').textContent = '';
		throw e;
	}
	if (fresh)
		clear(list);
	const items = doc.subjects || doc.entities;
	const frag = document.createDocumentFragment();
	for (const it of items) {
		const li = el('li');
		/* A subject is never broken across lines (one too long for its
		 * column is cut, whole in its tooltip), nor is a time. */
		const a = el('a', 'entity', it.subject);
		a.href = uiEntity(find.tenant, it.subject);
		a.title = it.subject;
		a.setAttribute('data-subject', it.subject);
		li.appendChild(a);
		const meta = el('span', 'meta', it.kind !== undefined
			? (it.kind === null ? '' : it.kind + ' · ') + 'last seen '
			: 'since ');
		meta.appendChild(el('time', 't', it.kind !== undefined ? it.last_seen : it.valid_from));
		li.appendChild(meta);
		frag.appendChild(li);
	}
	list.appendChild(frag);
	find.next = doc.next;
	$('more').hidden = !doc.next;
	const n = list.children.length;
	$('entities-caption').textContent = (doc.subjects
		? n + ' subject' + (n === 1 ? '' : 's') + ' whose ' + doc.predicate + ' is ' +
		  JSON.stringify(doc.value) + ' now'
		: n + ' entit' + (n === 1 ? 'y' : 'ies') +
		  (doc.kind ? ' of kind ' + doc.kind : '') +
		  (doc.prefix ? ' beginning ' + doc.prefix : '')) + (doc.next ? ' so far' : '');
}

function findSubmit(e, what) {
	e.preventDefault();
	const params = what === 'search'
		? { predicate: $('predicate').value.trim(), value: $('value').value }
		: { kind: $('kind').value.trim(), prefix: $('prefix').value.trim() };
	history.pushState(null, '', apiPath(uiTenant(find.tenant), params));
	run(() => findPage(what, params, true));
}

/* Runs an action of the user's with the page busy meanwhile. */
async function run(action) {
	begin();
	showError('');
	try {
		await action();
	} catch (e) {
		failed(e);
	} finally {
		end();
	}
}

/* ------------------------------------------------------------- timeline */

/* The entity being shown: its address, the documents read for it, and
 * the drawing's state. */
const ent = {
	tenant: null, subject: null, at: '', knownAt: '',
	full: null,	/* history with everything recorded */
	hist: null,	/* history as known at knownAt (full when none) */
	moments: [],	/* distinct recorded_at, oldest first */
	t0: 0, t1: 1,	/* the drawn range, ms */
	zoom: 1,
	trackPx: 1,	/* the bars' width in pixels at zoom 1 */
	bars: [],	/* every bar drawn, with .keelRow its row */
	rowsOfBars: [],	/* the bars of each row of the drawing */
	shifted: [],	/* bars whose text shiftTexts moved */
	selectedKey: null,
	seq: 0,
};

/* A row's identity across two readings of one history: its lane, event
 * and valid_from, and a relation row's object (one event may link
 * several objects in one relation at one moment). */
function rowKey(row) {
	return row.lane + '\u0000' + row.sub + '\u0000' + eventKey(row.asserted_by) + '\u0000' +
		row.valid_from;
}

/* The rows of a history document, each with its lane, its sub-row and
 * its times in ms (open: Infinity); worked out once per document. */
const rowsCache = new WeakMap();
function rowsOf(doc) {
	let rows = rowsCache.get(doc);
	if (rows)
		return rows;
	rows = [];
	const add = (r, lane, fact, sub) => {
		r.lane = lane;
		r.fact = fact;
		r.sub = sub;
		r.from = ms(r.valid_from);
		r.to = r.valid_to === null ? Infinity : ms(r.valid_to);
		rows.push(r);
	};
	for (const f of doc.facts)
		add(f, 'fact:' + f.predicate, true, '');
	for (const r of doc.relations)
		add(r, 'relation:' + r.relation, false, r.object);
	rowsCache.set(doc, rows);
	return rows;
}

/* What each fact lane's values are, worked out from the full history so
 * that moving "known at" keeps each value's colour and each line's scale:
 * {kind: 'numeric', min, max} when every value is a number and there are
 * two at least (a measurement: odometer, fuel, speed; a number that never
 * changes, a vehicle's year, is better named than drawn); {kind:
 * 'categorical', colours} when it has at most PALETTE distinct values (as
 * JSON text, sorted, each its colour's index); else {kind: 'plain'}:
 * identifiers and places, too many to colour apart, keep the alternating
 * shades and their text. */
const kindsCache = new WeakMap();
function laneKinds(doc) {
	let kinds = kindsCache.get(doc);
	if (kinds)
		return kinds;
	const values = new Map();
	for (const r of rowsOf(doc)) {
		if (!r.fact)
			continue;
		if (!values.has(r.lane))
			values.set(r.lane, []);
		if (r.value !== null)
			values.get(r.lane).push(r.value);
	}
	kinds = new Map();
	for (const [lane, vs] of values) {
		if (vs.length && vs.every((x) => typeof x === 'number')) {
			let min = Infinity, max = -Infinity;
			for (const x of vs) {
				min = Math.min(min, x);
				max = Math.max(max, x);
			}
			if (min < max) {
				kinds.set(lane, { kind: 'numeric', min, max });
				continue;
			}
		}
		const distinct = Array.from(new Set(vs.map((x) => JSON.stringify(x)))).sort();
		kinds.set(lane, distinct.length && distinct.length <= PALETTE
			? { kind: 'categorical', colours: new Map(distinct.map((t, i) => [t, i])) }
			: { kind: 'plain' });
	}
	kindsCache.set(doc, kinds);
	return kinds;
}

async function entityView(tenant, subject) {
	const q = new URLSearchParams(location.search);
	const same = ent.tenant === tenant && ent.subject === subject;
	Object.assign(ent, {
		tenant, subject, at: q.get('at') || '', knownAt: q.get('known_at') || '',
		selectedKey: same ? ent.selectedKey : null,
	});
	if (!same) {
		ent.zoom = 1;
		ent.full = null;
		ent.firstView = true;
	}
	$('entity-title').textContent = subject;
	$('at').value = ent.at;
	$('known-at').value = ent.knownAt;
	clear($('timeline'));
	$('timeline').setAttribute('data-rows', '0');
	clearDetail();
	showView('entity-view');
	await loadEntity();
}

/* Reads what the view needs and draws each part as its answer comes:
 * the full history (once per entity: the drawn range and the highlight
 * compare with it), the history as known at knownAt and the state at
 * `at`, asked at once; then the recording moments for the slider (once).
 * Those come from history?changes=1, the largest answer (every row again
 * with what it shortened), so it is asked only once the bars are drawn:
 * fetched and parsed beside the history, it delayed them by half. */
async function loadEntity() {
	const seq = ++ent.seq;
	const path = entityPath(ent.tenant, ent.subject);
	const needMoments = !ent.full;
	const full = ent.full ? Promise.resolve(ent.full) : api(path + '/history');
	const hist = ent.knownAt ? api(path + '/history', { known_at: ent.knownAt }).catch((e) => {
		/* Not yet recorded then: nothing to draw, not an error (the full
		 * history says whether the entity exists at all). */
		if (e instanceof ApiError && e.status === 404)
			return { facts: [], relations: [] };
		throw e;
	}) : full;
	const timeline = async () => {
		let f, h;
		try {
			[f, h] = await Promise.all([full, hist]);
		} catch (e) {
			if (seq === ent.seq)
				forgetTimeline();
			throw e;
		}
		if (seq !== ent.seq)
			return;
		ent.full = f;
		ent.hist = h;
		drawTimeline();
		syncSlider();
		if (!needMoments)
			return;
		const doc = await api(path + '/history', { changes: 1 });
		if (seq !== ent.seq)
			return;
		setMoments(doc);
		syncSlider();
	};
	/* Both parts are waited for, so that the page is "ready" only once
	 * each has drawn or cleared what it draws (an "as of" the API refuses
	 * leaves the timeline drawn); the first failure is then reported. */
	const parts = await Promise.allSettled([timeline(), loadState()]);
	const failure = parts.find((p) => p.status === 'rejected');
	if (parts[0].status === 'rejected' && seq === ent.seq) {
		/* No entity to show (404, 403, 410): no note nor summary either. */
		clear($('state'));
		$('entity-meta').textContent = '';
	}
	if (failure)
		throw failure.reason;
}

/* No timeline: its history could not be read (nothing of it is shown,
 * and the next reading starts afresh). */
function forgetTimeline() {
	clear($('timeline'));
	$('timeline').setAttribute('data-rows', '0');
	ent.full = null;
	ent.hist = null;
	ent.bars = [];
	ent.rowsOfBars = [];
	ent.shifted = [];
}

function setMoments(doc) {
	const seen = new Set();
	for (const r of doc.facts.concat(doc.relations))
		seen.add(r.recorded_at);
	ent.moments = Array.from(seen).sort((a, b) => ms(a) - ms(b) || (a < b ? -1 : 1));
	const s = $('known-at-slider');
	s.min = 0;
	/* One moment or none: nothing to move through; the thumb rests at
	 * the right, "everything recorded". */
	s.max = Math.max(1, ent.moments.length - 1);
	s.disabled = ent.moments.length < 2;
}

/* The slider at the latest moment recorded by knownAt (the last when
 * none). */
function syncSlider() {
	const s = $('known-at-slider');
	let i = ent.moments.length - 1;
	if (ent.knownAt) {
		const k = ms(ent.knownAt);
		while (i > 0 && ms(ent.moments[i]) > k)
			i--;
	}
	s.value = ent.moments.length < 2 ? s.max : Math.max(0, i);
	s.setAttribute('aria-valuetext', ent.knownAt || 'everything recorded');
}

function pct(t) {
	return ((t - ent.t0) / (ent.t1 - ent.t0)) * 100;
}

/* The drawn range: the full history's (so that moving known_at keeps the
 * picture still), with a margin on the right so that open rows stand out
 * past the last event. "As of" does not widen it: a cursor outside waits
 * at the edge. */
function computeRange() {
	let lo = Infinity, hi = -Infinity;
	for (const r of rowsOf(ent.full || ent.hist)) {
		lo = Math.min(lo, r.from);
		hi = Math.max(hi, r.to === Infinity ? r.from : r.to);
	}
	if (!Number.isFinite(lo)) {
		lo = Date.now() - 3600e3;
		hi = Date.now();
	}
	const span = Math.max(hi - lo, 60e3);
	ent.t0 = lo - span * 0.01;
	ent.t1 = lo + span * 1.04;
}

function rowLabel(text, sub) {
	const l = el('div', 'row-label');
	if (text)
		l.appendChild(el('span', 'lane-name', text));
	if (sub)
		l.appendChild(el('span', 'row-object', sub));
	return l;
}

/* The bars' width in pixels at zoom 1: the timeline's less the labels'
 * (--label-w, in rem). Read before building, from styles and the old
 * layout, so that deciding which bars get their text forces no layout
 * of the new ones. */
function trackWidth() {
	const tl = $('timeline');
	const rem = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
	const label = parseFloat(getComputedStyle(tl).getPropertyValue('--label-w')) || 13;
	return Math.max(1, tl.clientWidth - label * rem);
}

/* Gives their text to the bars now wide enough to show it: text is what
 * costs in laying out thousands of bars, and a bar a few pixels wide
 * would show none of it. */
function labelBars() {
	const px = (ent.trackPx * ent.zoom) / 100;
	for (const b of ent.bars)
		if (b.keelText && !b.firstChild && b.keelWidth * px >= MIN_TEXT_PX)
			b.textContent = b.keelText;
}

/* Builds the whole timeline of ent.hist. */
function drawTimeline() {
	const tl = $('timeline');
	const started = performance.now();
	const keepScroll = tl.scrollLeft;
	ent.trackPx = trackWidth();
	computeRange();
	const rows = rowsOf(ent.hist);
	const lanes = new Map();
	for (const r of rows) {
		let lane = lanes.get(r.lane);
		if (!lane) {
			lane = { name: r.lane, fact: r.fact, subs: new Map() };
			lanes.set(r.lane, lane);
		}
		let sub = lane.subs.get(r.sub);
		if (!sub) {
			sub = [];
			lane.subs.set(r.sub, sub);
		}
		sub.push(r);
	}
	const order = Array.from(lanes.values()).sort((a, b) =>
		a.fact !== b.fact ? (a.fact ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

	const inner = el('div', 'tl-inner');
	inner.style.setProperty('--zoom', String(ent.zoom));
	const axisRow = el('div', 'row axis-row');
	axisRow.appendChild(rowLabel('UTC', null));
	const axis = el('div', 'track axis');
	axis.id = 'axis';
	axis.title = 'Click to set "as of" to that moment';
	axis.appendChild(el('div', 'ticks'));
	axis.appendChild(el('div', 'at-marker', 'as of'));
	axisRow.appendChild(axis);
	inner.appendChild(axisRow);

	const bars = [];
	const rowsOfBars = []; /* each row's bars, in time order */
	const textPct = MIN_TEXT_PX / ((ent.trackPx * ent.zoom) / 100); /* in percent */
	const kinds = laneKinds(ent.full || ent.hist);
	const plain = { kind: 'plain' };
	for (const lane of order) {
		const kind = (lane.fact && kinds.get(lane.name)) || plain;
		const laneEl = el('div', 'lane ' + (lane.fact ? 'lane-fact' : 'lane-relation') +
			(kind.kind === 'plain' ? '' : ' lane-' + kind.kind));
		laneEl.setAttribute('data-lane', lane.name);
		const title = lane.name.slice(lane.name.indexOf(':') + 1);
		const subs = Array.from(lane.subs.keys()).sort();
		subs.forEach((subName, i) => {
			const row = el('div', 'row');
			const label = rowLabel(i === 0 ? title : null, subName || null);
			if (kind.kind === 'numeric')
				label.appendChild(yAxis(kind));
			row.appendChild(label);
			const track = el('div', 'track');
			const subRows = lane.subs.get(subName);
			const rowBars = [];
			for (let j = 0; j < subRows.length; j++) {
				const b = makeBar(subRows[j], j, textPct, kind);
				bars.push(b);
				rowBars.push(b);
				track.appendChild(b);
			}
			if (kind.kind === 'numeric')
				track.appendChild(stepLine(subRows, kind));
			rowsOfBars.push(rowBars);
			row.appendChild(track);
			laneEl.appendChild(row);
		});
		inner.appendChild(laneEl);
	}
	drawValueLegend(kinds, order);
	const overlay = el('div', 'overlay');
	const cursor = el('div', 'at-cursor');
	cursor.id = 'at-cursor';
	overlay.appendChild(cursor);
	inner.insertBefore(el('div', 'overlay grid'), inner.firstChild);
	inner.appendChild(overlay);
	if (rows.length === 0)
		inner.appendChild(el('p', 'hint empty', 'No rows recorded by then.'));

	clear(tl);
	tl.appendChild(inner);
	ent.bars = bars;
	ent.rowsOfBars = rowsOfBars;
	ent.shifted = [];
	tl.setAttribute('data-rows', String(bars.length));
	tl.setAttribute('data-render-ms', (performance.now() - started).toFixed(1));
	tl.setAttribute('data-t0', String(ent.t0));
	tl.setAttribute('data-t1', String(ent.t1));
	tl.scrollLeft = keepScroll;
	if (ent.firstView) {
		ent.firstView = false;
		firstView();
	}
	drawTicks();
	placeCursor();
	markChanged();
	reselect();
}

/* One row's bar; its text only when it is at least textPct wide. In a
 * categorical lane its value's colour (class vN), in a numeric one a
 * light band under the line, without text (the line and its scale say
 * the value; the tooltip too). */
function makeBar(r, j, textPct, kind) {
	const b = document.createElement('div');
	const unset = r.fact ? r.value === null : !r.linked;
	const open = r.valid_to === null;
	let look = j % 2 ? ' alt' : '';
	if (kind.kind === 'categorical' && !unset)
		look = ' v' + kind.colours.get(JSON.stringify(r.value));
	else if (kind.kind === 'numeric')
		look = ' numeric' + look;
	b.className = 'bar ' + (r.fact ? 'fact' : 'relation') + (unset ? ' unset' : '') +
		(open ? ' open' : '') + look;
	b.setAttribute('data-asserted-by', eventKey(r.asserted_by));
	b.setAttribute('data-closed-by', eventKey(r.closed_by));
	b.setAttribute('data-valid-from', r.valid_from);
	b.setAttribute('data-valid-to', r.valid_to || '');
	let text;
	if (r.fact) {
		b.setAttribute('data-value', JSON.stringify(r.value));
		text = unset ? '' : barText(r.value);
		if (kind.kind === 'numeric') {
			b.title = r.predicate + ': ' + (unset ? 'unset' : text) + '\n' +
				r.valid_from + ' → ' + (r.valid_to || 'open');
			text = '';
		}
	} else {
		b.setAttribute('data-object', r.object);
		b.setAttribute('data-linked', String(r.linked));
		text = unset ? '' : r.object;
	}
	/* One stop of the Tab key per row (its first bar); the arrows move
	 * along the row (a roving tabindex), so Tab never walks 10 000 bars. */
	b.tabIndex = j === 0 ? 0 : -1;
	b.setAttribute('role', 'button');
	if (!b.title)
		b.title = (r.fact ? r.predicate : r.relation) + ': ' +
			(unset ? (r.fact ? 'unset' : 'unlinked from ' + r.object) : text) + '\n' +
			r.valid_from + ' → ' + (r.valid_to || 'open');
	const from = pct(r.from);
	const width = Math.max(0, (open ? 100 : pct(r.to)) - from);
	b.style.left = from + '%';
	b.style.width = width + '%';
	if (text && width >= textPct)
		b.textContent = text;
	b.keelRow = r;
	b.keelText = text;
	b.keelWidth = width;
	return b;
}

/* A number's height in a numeric lane's 0..100 box (SVG y, down): the
 * lane's largest value at 10, its smallest at 90, one value alone in the
 * middle. */
function yOf(v, kind) {
	const span = kind.max - kind.min;
	return span > 0 ? 90 - ((v - kind.min) / span) * 80 : 50;
}

/* Three decimals are a thousandth of a percent: plenty, and short. */
function coord(x) {
	return String(Math.round(x * 1000) / 1000);
}

/* A numeric lane's values as a step line over valid time: each row a
 * level from its valid_from to its valid_to (an open row to the right
 * edge), each change a vertical step; an unset row or a gap breaks the
 * line (one polyline a stretch). In the track's percent, so it zooms with
 * the bars; pointer events go to the bars beneath. */
function stepLine(rows, kind) {
	const svg = document.createElementNS(SVGNS, 'svg');
	svg.setAttribute('class', 'step-line');
	svg.setAttribute('viewBox', '0 0 100 100');
	svg.setAttribute('preserveAspectRatio', 'none');
	svg.setAttribute('aria-hidden', 'true');
	svg.setAttribute('data-min', String(kind.min));
	svg.setAttribute('data-max', String(kind.max));
	for (const y of [10, 90]) {
		const g = document.createElementNS(SVGNS, 'line');
		g.setAttribute('class', 'y-grid');
		g.setAttribute('x1', '0');
		g.setAttribute('x2', '100');
		g.setAttribute('y1', String(y));
		g.setAttribute('y2', String(y));
		svg.appendChild(g);
	}
	let points = [], end = null;
	const flush = () => {
		if (points.length) {
			const line = document.createElementNS(SVGNS, 'polyline');
			line.setAttribute('points', points.join(' '));
			svg.appendChild(line);
		}
		points = [];
		end = null;
	};
	for (const r of rows) {
		if (r.value === null) {
			flush();
			continue;
		}
		if (r.to === r.from)
			continue; /* emptied: holds at no moment */
		const x0 = pct(r.from), x1 = r.to === Infinity ? 100 : pct(r.to);
		if (end !== null && end !== r.from)
			flush();
		const y = coord(yOf(r.value, kind));
		points.push(coord(x0) + ',' + y, coord(x1) + ',' + y);
		end = r.to;
	}
	flush();
	return svg;
}

/* A numeric lane's scale beside its name: its largest and smallest value
 * at the heights the line draws them. */
function yAxis(kind) {
	const a = el('span', 'y-axis');
	a.appendChild(el('span', 'y-max', String(kind.max)));
	if (kind.max !== kind.min)
		a.appendChild(el('span', 'y-min', String(kind.min)));
	return a;
}

/* #value-legend: each categorical lane's values with their colours. */
function drawValueLegend(kinds, order) {
	const box = $('value-legend');
	clear(box);
	for (const lane of order) {
		const kind = lane.fact && kinds.get(lane.name);
		if (!kind || kind.kind !== 'categorical')
			continue;
		const li = el('li', 'value-lane');
		li.setAttribute('data-lane', lane.name);
		li.appendChild(el('span', 'lane-name', lane.name.slice(lane.name.indexOf(':') + 1)));
		for (const [text, i] of kind.colours) {
			const item = el('span', 'value-item');
			item.setAttribute('data-value', text);
			item.appendChild(el('span', 'swatch v' + i));
			item.appendChild(el('span', 'value-name', barText(JSON.parse(text))));
			li.appendChild(item);
		}
		box.appendChild(li);
	}
	box.hidden = !box.firstChild;
}

/* The first view of an entity: all of it when its rows are wide enough
 * to read there; else zoomed so that the rows of its busiest lane are
 * MIN_ROW_PX wide (their mean spacing over the cap rows near the moment
 * looked at), on the stretch around "as of" when it is in the range, else
 * on the latest (the present state is what is looked at first). Without
 * "as of", when an earlier stretch is denser still, needing twice that
 * zoom or more (a vehicle's dense first hour of telemetry, then a sparse
 * day), it opens on that stretch instead: the cap rows of a lane closest
 * together, zoomed so that they fill the view, MIN_ROW_PX a row on
 * average; anywhere else, or whole, the dense hour would be a smear. All
 * of it again when the stretch would be half of it or more. Fit shows all
 * of it. A dense hour of telemetry is then read a few minutes at a time,
 * not as a smear. */
function firstView() {
	const tl = $('timeline');
	const axis = $('axis');
	if (!axis)
		return;
	const viewW = Math.max(1, tl.clientWidth - axis.offsetLeft);
	const cap = Math.max(4, Math.floor(viewW / MIN_ROW_PX));
	const range = ent.t1 - ent.t0;
	const a = ent.at ? ms(ent.at) : NaN;
	const around = a >= ent.t0 && a <= ent.t1;
	const zoomFor = (spacing) => (MIN_ROW_PX * range) / (spacing * viewW);
	const limit = (z) => Math.min(z, Math.max(1, Math.min(MAX_ZOOM, range / 1000)));
	let zoom = 1;
	let densest = null; /* {zoom, mid}: the densest cap rows of any lane */
	for (const bars of ent.rowsOfBars) {
		const n = bars.length;
		if (n <= cap)
			continue;
		const from = (i) => bars[i].keelRow.from;
		let lo = n - cap; /* the cap rows around "as of", or the last */
		if (around) {
			let k = 0;
			while (k + 1 < n && from(k + 1) <= a)
				k++;
			lo = Math.min(Math.max(0, k - (cap >> 1)), n - cap);
		}
		const spacing = (from(lo + cap - 1) - from(lo)) / (cap - 1);
		if (spacing > 0)
			zoom = Math.max(zoom, zoomFor(spacing));
		/* the shortest span of cap rows in a row (the latest of equals) */
		let best = Infinity, at = 0;
		for (let i = 0; i + cap - 1 < n; i++) {
			const span = from(i + cap - 1) - from(i);
			if (span > 0 && span <= best) {
				best = span;
				at = i;
			}
		}
		if (best < Infinity) {
			const z = zoomFor(best / (cap - 1));
			if (!densest || z > densest.zoom)
				densest = {zoom: z, mid: (from(at) + from(at + cap - 1)) / 2};
		}
	}
	let centre = around ? a : NaN; /* else the view ends at the latest */
	if (!around && densest && densest.zoom >= 2 * zoom && limit(densest.zoom) >= 2) {
		zoom = densest.zoom;
		centre = densest.mid;
	}
	zoom = limit(zoom);
	if (zoom < 2)
		return; /* most of it would be shown anyway: show all */
	const shown = range / zoom;
	const start = Math.min(Math.max(isNaN(centre) ? ent.t1 - shown : centre - shown / 2, ent.t0),
			       ent.t1 - shown);
	ent.zoom = zoom;
	tl.querySelector('.tl-inner').style.setProperty('--zoom', String(zoom));
	tl.scrollLeft = ((start - ent.t0) / range) * viewW * zoom;
	labelBars();
}

/* ------------------------------------------------------- axis and zoom */

const STEPS = [1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3,
	3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3, 2 * 86400e3, 7 * 86400e3,
	14 * 86400e3, 30 * 86400e3, 91 * 86400e3, 182 * 86400e3, 365 * 86400e3];

function tickLabel(t, step, first) {
	const s = iso(t);
	const day = s.slice(0, 10);
	if (step >= 86400e3)
		return day;
	const clock = step < 60e3 ? s.slice(11, 19) : s.slice(11, 16);
	return first || s.slice(11, 19) === '00:00:00' ? day + ' ' + clock : clock;
}

/* Ticks and grid lines for the part of the range in view (a step of at
 * least TICK_SPACING_PX), redrawn on zoom and scroll. */
function drawTicks() {
	const tl = $('timeline');
	const axis = $('axis');
	if (!axis)
		return;
	const grid = tl.querySelector('.overlay.grid');
	const labelW = axis.offsetLeft;
	const viewW = Math.max(1, tl.clientWidth - labelW);
	const trackW = viewW * ent.zoom;
	const perPx = (ent.t1 - ent.t0) / trackW;
	const step = STEPS.find((s) => s / perPx >= TICK_SPACING_PX) || STEPS[STEPS.length - 1];
	const from = ent.t0 + (tl.scrollLeft - TICK_SPACING_PX) * perPx;
	const to = ent.t0 + (tl.scrollLeft + viewW + TICK_SPACING_PX) * perPx;
	const ticks = document.createDocumentFragment(), lines = document.createDocumentFragment();
	let first = true;
	for (let t = Math.ceil(Math.max(from, ent.t0) / step) * step; t <= Math.min(to, ent.t1); t += step) {
		const p = pct(t) + '%';
		const tick = el('div', 'tick', tickLabel(t, step, first));
		tick.style.left = p;
		ticks.appendChild(tick);
		const line = el('div', 'gridline');
		line.style.left = p;
		lines.appendChild(line);
		first = false;
	}
	const tickBox = axis.querySelector('.ticks');
	clear(tickBox);
	tickBox.appendChild(ticks);
	clear(grid);
	grid.appendChild(lines);
	shiftTexts(ent.t0 + tl.scrollLeft * perPx, perPx);
	/* What is in view, for the tests and whoever reads the page's state. */
	tl.setAttribute('data-zoom', String(ent.zoom));
	tl.setAttribute('data-view-from', iso(Math.round(ent.t0 + tl.scrollLeft * perPx)));
	tl.setAttribute('data-view-to', iso(Math.round(ent.t0 + (tl.scrollLeft + viewW) * perPx)));
}

/* In each row, the bar that runs under the labels from the left starts
 * its text at their edge (a padding), so a long row scrolled into keeps
 * saying what it is. One bar a row, found by bisection: cheap on every
 * scroll however many bars there are. */
function shiftTexts(edge, perPx) {
	for (const b of ent.shifted)
		b.style.paddingLeft = '';
	ent.shifted = [];
	for (const bars of ent.rowsOfBars) {
		let lo = 0, hi = bars.length - 1;
		while (lo < hi) { /* the last bar beginning at or before the edge */
			const mid = (lo + hi + 1) >> 1;
			if (bars[mid].keelRow.from <= edge)
				lo = mid;
			else
				hi = mid - 1;
		}
		const b = bars[lo];
		if (!b || b.keelRow.from > edge || Math.min(b.keelRow.to, ent.t1) <= edge)
			continue;
		const hidden = (edge - b.keelRow.from) / perPx;
		const left = (Math.min(b.keelRow.to, ent.t1) - edge) / perPx;
		if (hidden < 4 || left < MIN_TEXT_PX)
			continue;
		b.style.paddingLeft = hidden + 4 + 'px';
		ent.shifted.push(b);
	}
}

let ticksQueued = false;
function queueTicks() {
	if (ticksQueued)
		return;
	ticksQueued = true;
	requestAnimationFrame(() => {
		ticksQueued = false;
		drawTicks();
	});
}

/* Zooms to z, keeping the moment under `anchor` (0..1 across the visible
 * part of the timeline) where it is. */
function setZoom(z, anchor) {
	const tl = $('timeline');
	const axis = $('axis');
	if (!axis)
		return;
	const maxZoom = Math.max(1, Math.min(MAX_ZOOM, (ent.t1 - ent.t0) / 1000));
	z = Math.min(Math.max(z, 1), maxZoom);
	const viewW = Math.max(1, tl.clientWidth - axis.offsetLeft);
	const at = (tl.scrollLeft + anchor * viewW) / (viewW * ent.zoom);
	ent.zoom = z;
	tl.querySelector('.tl-inner').style.setProperty('--zoom', String(z));
	tl.scrollLeft = at * viewW * z - anchor * viewW;
	/* Ticks first, while the layout the scroll needed is fresh; the
	 * bars' new text is laid out with the next frame. */
	drawTicks();
	labelBars();
}

function wheel(e) {
	const tl = $('timeline');
	const axis = $('axis');
	if (!axis || Math.abs(e.deltaY) <= Math.abs(e.deltaX))
		return; /* horizontal: the browser scrolls (pans) */
	const rect = tl.getBoundingClientRect();
	const x = e.clientX - rect.left - axis.offsetLeft;
	if (x < 0)
		return; /* over the labels: scroll the page */
	e.preventDefault();
	const unit = e.deltaMode === 1 ? 20 : e.deltaMode === 2 ? 400 : 1;
	const viewW = Math.max(1, tl.clientWidth - axis.offsetLeft);
	/* Wheel events come faster than frames: their zooms are gathered and
	 * applied once a frame, so 10 000 bars are laid out once a frame. */
	wheelZoom.factor *= Math.exp(-e.deltaY * unit * 0.002);
	wheelZoom.anchor = x / viewW;
	if (wheelZoom.queued)
		return;
	wheelZoom.queued = true;
	requestAnimationFrame(() => {
		wheelZoom.queued = false;
		const f = wheelZoom.factor;
		wheelZoom.factor = 1;
		setZoom(ent.zoom * f, wheelZoom.anchor);
	});
}
const wheelZoom = { factor: 1, anchor: 0.5, queued: false };

/* Scrolls the timeline so that a bar reached with the keys is beside the
 * lane names, not under them: the browser's own scrolling on focus
 * counts the sticky names as room to show it in. The arrows stay in
 * one row, so the page needs no vertical scroll. */
function reveal(bar) {
	const tl = $('timeline');
	const view = tl.getBoundingClientRect();
	const edge = view.left + tl.clientLeft + $('axis').offsetLeft; /* the names' right edge */
	const right = view.left + tl.clientLeft + tl.clientWidth;
	const r = bar.getBoundingClientRect();
	const margin = 8;
	if (r.left < edge)
		tl.scrollLeft -= edge - r.left + margin;
	else if (r.right > right)
		tl.scrollLeft += Math.min(r.right - right + margin, r.left - edge - margin);
}

/* Dragging pans; a drag is not a click. */
const drag = { x: 0, scroll: 0, on: false, moved: false };
function dragStart(e) {
	if (e.button !== 0 || !e.target.closest('.track'))
		return;
	drag.x = e.clientX;
	drag.scroll = $('timeline').scrollLeft;
	drag.on = true;
	drag.moved = false;
}
function dragMove(e) {
	if (!drag.on)
		return;
	const dx = e.clientX - drag.x;
	if (Math.abs(dx) > 3) {
		drag.moved = true;
		$('timeline').classList.add('dragging');
	}
	if (drag.moved)
		$('timeline').scrollLeft = drag.scroll - dx;
}
function dragEnd() {
	drag.on = false;
	$('timeline').classList.remove('dragging');
}

/* ---------------------------------------------------- as of, known at */

/* The "as of" line across the lanes, and its label on the axis. */
function placeCursor() {
	const c = $('at-cursor');
	const m = document.querySelector('#axis .at-marker');
	if (!c || !m)
		return;
	const a = ent.at ? ms(ent.at) : NaN;
	c.hidden = m.hidden = Number.isNaN(a);
	if (c.hidden)
		return;
	const p = pct(a);
	const where = p < 0 ? ' (before the timeline)' : p > 100 ? ' (after the timeline)' : '';
	for (const e of [c, m]) {
		e.classList.toggle('before', p < 0);
		e.classList.toggle('after', p > 100);
		e.style.left = Math.min(Math.max(p, 0), 100) + '%';
		e.title = 'As of ' + ent.at + where;
	}
}

function setAddress(push) {
	const url = uiEntity(ent.tenant, ent.subject, ent.at, ent.knownAt);
	if (url !== location.pathname + location.search)
		history[push ? 'pushState' : 'replaceState'](null, '', url);
}

function setAt(value, push) {
	ent.at = value.trim();
	$('at').value = ent.at;
	setAddress(push);
	placeCursor();
	/* A timeline a failed read cleared (the server gone, say) is read
	 * again with the state; a drawn one does not depend on "as of". */
	run(ent.hist ? loadState : loadEntity);
}

let knownTimer = null;
/* Sets known_at and reads again; from the slider (debounced: the page is
 * "loading" from the first move until it has drawn the last). */
function setKnownAt(value, push, debounce) {
	ent.knownAt = value.trim();
	$('known-at').value = ent.knownAt;
	setAddress(push);
	if (knownTimer === null)
		begin();
	else
		clearTimeout(knownTimer);
	knownTimer = setTimeout(() => {
		knownTimer = null;
		run(loadEntity).finally(end);
	}, debounce ? 120 : 0);
}

/* Rows of the view that a later-recorded event changed: in the full
 * history the same row (lane, asserted_by, valid_from) ends elsewhere,
 * was closed by another event, or is not there at all. */
function markChanged() {
	const on = $('highlight-changed').checked && ent.knownAt && ent.full;
	let later = null;
	if (on) {
		later = new Map();
		for (const r of rowsOf(ent.full))
			later.set(rowKey(r), r);
	}
	let n = 0;
	for (const b of ent.bars) {
		let changed = false;
		if (later) {
			const r = b.keelRow;
			const now = later.get(rowKey(r));
			changed = !now || now.valid_to !== r.valid_to ||
				eventKey(now.closed_by) !== eventKey(r.closed_by);
		}
		b.classList.toggle('changed', changed);
		n += changed;
	}
	$('timeline').setAttribute('data-changed', String(n));
}

/* #state: the entity at `at` as known at knownAt (keel show). */
let stateSeq = 0;
async function loadState() {
	const seq = ++stateSeq;
	const st = $('state');
	const title = 'State as of ' + (ent.at || 'now') +
		(ent.knownAt ? ', as known at ' + ent.knownAt : '');
	let doc;
	try {
		doc = await api(entityPath(ent.tenant, ent.subject), { at: ent.at, known_at: ent.knownAt });
	} catch (e) {
		if (seq !== stateSeq)
			return;
		clear(st);
		$('state-title').textContent = title;
		if (e instanceof ApiError && e.status === 404) {
			st.appendChild(el('p', 'hint', 'Nothing known about ' + ent.subject +
				' at that moment: before its first event, or not yet recorded.'));
			return;
		}
		throw e;
	}
	if (seq !== stateSeq)
		return;
	clear(st);
	$('state-title').textContent = title;
	$('entity-meta').textContent = (doc.kind ? doc.kind + ' · ' : '') + 'first seen ' +
		doc.first_seen + ' · last seen ' + doc.last_seen;
	const facts = el('ul', 'state-list');
	for (const p of Object.keys(doc.facts).sort()) {
		const f = doc.facts[p];
		const li = el('li', 'state-fact');
		li.setAttribute('data-predicate', p);
		li.setAttribute('data-value', JSON.stringify(f.value));
		li.appendChild(el('span', 'k', p));
		li.appendChild(el('span', 'v', valueText(f.value)));
		li.appendChild(el('span', 'since', 'since ' + f.valid_from));
		facts.appendChild(li);
	}
	st.appendChild(el('h3', null, 'Facts'));
	st.appendChild(doc.facts && Object.keys(doc.facts).length ? facts : el('p', 'hint', 'none'));
	const rel = el('ul', 'state-list');
	for (const r of doc.outgoing) {
		const li = el('li', 'state-relation');
		li.setAttribute('data-relation', r.relation);
		li.setAttribute('data-object', r.object);
		li.appendChild(el('span', 'k', r.relation));
		const a = el('a', 'v', r.object);
		a.href = uiEntity(ent.tenant, r.object, ent.at, ent.knownAt);
		li.appendChild(a);
		li.appendChild(el('span', 'since', 'since ' + r.valid_from));
		rel.appendChild(li);
	}
	st.appendChild(el('h3', null, 'Relations'));
	st.appendChild(doc.outgoing.length ? rel : el('p', 'hint', 'none'));
	if (doc.incoming && doc.incoming.length) {
		const inc = el('ul', 'state-list');
		for (const r of doc.incoming) {
			const li = el('li', 'state-incoming');
			li.setAttribute('data-subject', r.subject);
			li.setAttribute('data-relation', r.relation);
			const a = el('a', 'k', r.subject);
			a.href = uiEntity(ent.tenant, r.subject, ent.at, ent.knownAt);
			li.appendChild(a);
			li.appendChild(el('span', 'v', r.relation + ' → here'));
			li.appendChild(el('span', 'since', 'since ' + r.valid_from));
			inc.appendChild(li);
		}
		st.appendChild(el('h3', null, 'Pointing here'));
		st.appendChild(inc);
	}
}

/* -------------------------------------------------------------- detail */

function clearDetail() {
	clear($('detail-fields'));
	$('detail-event').textContent = '';
	$('detail-empty').hidden = false;
}

function reselect() {
	if (!ent.selectedKey)
		return clearDetail();
	const b = ent.bars.find((x) => rowKey(x.keelRow) === ent.selectedKey);
	if (b)
		select(b);
	else
		clearDetail();
}

let whySeq = 0;
function select(bar) {
	for (const b of $('timeline').querySelectorAll('.bar.selected'))
		b.classList.remove('selected');
	bar.classList.add('selected');
	const r = bar.keelRow;
	ent.selectedKey = rowKey(r);
	$('detail-empty').hidden = true;
	const dl = $('detail-fields');
	clear(dl);
	const field = (k, v) => {
		dl.appendChild(el('dt', null, k));
		dl.appendChild(el('dd', null, v));
	};
	if (r.fact) {
		field('Predicate', r.predicate);
		field('Value', r.value === null ? 'unset (null)' : JSON.stringify(r.value));
	} else {
		field('Relation', r.relation);
		field('Object', r.object);
		field('Linked', r.linked ? 'yes' : 'no (unlinked)');
	}
	field('Valid', r.valid_from + ' → ' + (r.valid_to || 'open'));
	field('Asserted by', eventText(r.asserted_by));
	field('Closed by', eventText(r.closed_by));
	const pre = $('detail-event');
	if (!r.fact) {
		pre.textContent = 'The event behind a relation row is ' + r.asserted_by.id +
			' from ' + r.asserted_by.source + ' (why answers for facts).';
		return;
	}
	pre.textContent = 'Reading the event…';
	const seq = ++whySeq;
	run(async () => {
		let doc;
		try {
			doc = await api(entityPath(ent.tenant, ent.subject) + '/why',
				{ predicate: r.predicate, at: r.valid_from, known_at: ent.knownAt });
		} catch (e) {
			if (seq === whySeq)
				pre.textContent = '';
			throw e;
		}
		if (seq !== whySeq)
			return;
		if (eventKey(doc.asserted_by) !== eventKey(r.asserted_by))
			field('Event shown', 'of ' + eventText(doc.asserted_by) +
				', whose row begins at the same moment and holds the value then');
		pre.textContent = JSON.stringify(doc.event.envelope, null, 2);
	});
}

/* --------------------------------------------------------------- events */

function bind() {
	$('token-form').addEventListener('submit', (e) => {
		e.preventDefault();
		const t = $('token').value.trim();
		$('token').value = '';
		if (!t)
			return;
		sessionStorage.setItem(TOKEN_KEY, t);
		route();
	});
	$('sign-out').addEventListener('click', () => {
		sessionStorage.removeItem(TOKEN_KEY);
		ent.full = null;
		route();
	});
	$('find-form').addEventListener('submit', (e) => findSubmit(e, 'entities'));
	$('search-form').addEventListener('submit', (e) => findSubmit(e, 'search'));
	$('more').addEventListener('click', () => run(() => findPage(null, null, false)));

	$('time-form').addEventListener('submit', (e) => {
		e.preventDefault();
		if ($('at').value.trim() !== ent.at)
			setAt($('at').value, true);
		if ($('known-at').value.trim() !== ent.knownAt)
			setKnownAt($('known-at').value, true, false);
	});
	/* Enter applies a time typed (the form has no submit button). */
	for (const id of ['at', 'known-at'])
		$(id).addEventListener('keydown', (e) => {
			if (e.key === 'Enter') {
				e.preventDefault();
				$(id).dispatchEvent(new Event('change'));
			}
		});
	$('at').addEventListener('change', () => {
		if ($('at').value.trim() !== ent.at)
			setAt($('at').value, true);
	});
	$('at-now').addEventListener('click', () => setAt('', true));
	$('known-at').addEventListener('change', () => {
		if ($('known-at').value.trim() !== ent.knownAt)
			setKnownAt($('known-at').value, true, false);
	});
	/* The slider names moments; a known_at typed between two of them sits
	 * on the earlier, so a key that leaves the value where it is (Home on
	 * the first) still means "this moment": keys are heard too. */
	const slider = $('known-at-slider');
	const slid = () => {
		const m = ent.moments[Number(slider.value)];
		if (m && m !== ent.knownAt)
			setKnownAt(m, false, true);
	};
	slider.addEventListener('input', slid);
	/* Only the keys that move a range: Tab landing on the slider (its
	 * keyup comes here) must not set known_at. */
	const moves = ['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End', 'PageUp', 'PageDown'];
	slider.addEventListener('keyup', (e) => {
		if (moves.includes(e.key))
			slid();
	});
	$('known-at-now').addEventListener('click', () => {
		ent.full = null; /* read everything again: something may have come since */
		setKnownAt('', true, false);
	});
	$('highlight-changed').addEventListener('change', markChanged);

	$('zoom-in').addEventListener('click', () => setZoom(ent.zoom * 2, 0.5));
	$('zoom-out').addEventListener('click', () => setZoom(ent.zoom / 2, 0.5));
	$('zoom-fit').addEventListener('click', () => setZoom(1, 0));

	const tl = $('timeline');
	tl.addEventListener('wheel', wheel, { passive: false });
	tl.addEventListener('scroll', queueTicks, { passive: true });
	tl.addEventListener('pointerdown', dragStart);
	window.addEventListener('pointermove', dragMove);
	window.addEventListener('pointerup', dragEnd);
	window.addEventListener('pointercancel', dragEnd);
	window.addEventListener('resize', () => {
		ent.trackPx = trackWidth();
		labelBars();
		queueTicks();
	});
	tl.addEventListener('click', (e) => {
		if (drag.moved) {
			drag.moved = false;
			return;
		}
		const bar = e.target.closest('.bar');
		if (bar)
			return select(bar);
		const axis = e.target.closest('#axis');
		if (axis) {
			const rect = axis.getBoundingClientRect();
			const f = (e.clientX - rect.left) / rect.width;
			setAt(iso(Math.round(ent.t0 + f * (ent.t1 - ent.t0))), true);
		}
	});
	/* On a bar: Enter or Space selects it, the arrows go to the row's
	 * previous or next bar (a row's bars are in time order). */
	tl.addEventListener('keydown', (e) => {
		const bar = e.target.closest && e.target.closest('.bar');
		if (!bar)
			return;
		if (e.key === 'Enter' || e.key === ' ') {
			e.preventDefault();
			select(bar);
		} else if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
			const next = e.key === 'ArrowLeft' ? bar.previousElementSibling : bar.nextElementSibling;
			if (next) {
				e.preventDefault();
				bar.tabIndex = -1;
				next.tabIndex = 0;
				next.focus({ preventScroll: true });
				reveal(next);
			}
		}
	});
	window.addEventListener('popstate', route);
}

bind();
route();
