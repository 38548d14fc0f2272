'use strict';
// The framework-neutral HTTP layer under ratewarden/express, ratewarden/fastify and ratewarden/koa: the options
// (one set, documented once in docs/node.md), the request's key, skip, the decision -> response plan (the header
// fields of headers.js, the 429 body), the store-error policy and shadow mode. An adapter reads the request through
// an `access` object and applies the plan that `run` returns to its framework's response.
//
// A request meets limiters in turn (app-wide, router, route): what they did is one `state` per request,
// { counted, reports, shadowed }, which the adapter keeps on the request. Its fields are computed from every report so far,
// so each limiter sets them again with its own added.

const native = require('./native');
const { Limiter } = require('./limiter');
const { limiterOptions, knownOptions } = require('./options');
const { storeFor } = require('./store');
const { DEFAULT_IPV6_SUBNET } = require('./client_ip');
const { STYLES, Fields, rateLimitFields } = require('./headers');
const { invalidArgument } = require('./errors');
const { KeyError, keyMaker, describeSpec, needsBody, isPromise } = require('./http_keys');
const { scopeFor, scopedStore } = require('./http_scope');
const { routeName } = require('./route_name');
const { ThrottledLog } = require('./http_log');
const { limiterName, ratesText } = require('./http_limiter_name');
const { watchStore } = require('./http_store_log');
const { KeyList } = require('./lists');

const KNOWN = ['limit', 'window', 'policy', 'algorithm', 'burst', 'buckets', 'prefix', 'store', 'scope', 'key',
  'ipv6Subnet', 'skip', 'handler', 'onKeyError', 'message', 'statusCode', 'problem', 'headers', 'legacyHeaders',
  'onStoreError', 'skippedHeader', 'shadow', 'logger', 'logInterval', 'countWhen', 'allowList', 'denyList',
  'blockDuration'];

// The plan's kinds: go on (with fields to set, maybe none), refuse (fields, status and body), the key could not be
// made (onKeyError answers), or an error for the framework's error handling.
const NEXT = 0;
const DENY = 1;
const KEY_ERROR = 2;
const ERROR = 3;

const NONE = Object.freeze([]);
const PASS = Object.freeze({ kind: NEXT, fields: NONE, decision: undefined });
const failure = (error) => ({ kind: ERROR, fields: NONE, decision: undefined, error });

const COUNT_WHEN = ['failure', 'success'];
// A refusal's body: its text, and its bytes and their number (sent where a framework would change a string's type).
const textBody = (text) => {
  const bytes = Buffer.from(text);
  return { text, bytes, length: bytes.length };
};
// The bodies no option words, the same in Python (tests/conformance/refusals.json).
const FORBIDDEN = textBody('403 Forbidden\n');
const KEY_ERROR_BODY = '400 Bad Request: the client could not be identified\n';

const notRetryAfter = (field) => field[0] !== 'Retry-After';

const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

// The value of the skipped-limiting field for each store failure.
const SKIPPED = {
  ERR_RATEWARDEN_STORE_UNAVAILABLE: 'store-unavailable',
  ERR_RATEWARDEN_STORE_TIMEOUT: 'store-timeout',
  ERR_RATEWARDEN_STORE: 'store-error',
};

// The store failures the core's events tell of (the store's health changed): logged once per change by
// http_store_log.js, not per request here.
const TOLD_BY_EVENTS = { ERR_RATEWARDEN_STORE_UNAVAILABLE: true, ERR_RATEWARDEN_STORE_TIMEOUT: true };

function positiveInteger(name, value) {
  if (!(Number.isSafeInteger(value) && value >= 1)) {
    throw invalidArgument(`${name} must be an integer >= 1, got ${JSON.stringify(value)}`);
  }
}

function optionalFunction(name, value) {
  if (value !== undefined && typeof value !== 'function') throw invalidArgument(`${name} must be a function`);
}

function policyOf(options) {
  const { policy, limit, window: windowMs } = options;
  if (policy !== undefined) {
    if (limit !== undefined || windowMs !== undefined) throw invalidArgument('give either policy or limit/window, not both');
    return policy;
  }
  const l = limit === undefined ? 5 : limit;
  const w = windowMs === undefined ? 60000 : windowMs;
  positiveInteger('limit', l);
  positiveInteger('window (milliseconds)', w);
  return `${l}/${w}ms`;
}

// "100-in-1min": the name of a rate in the RateLimit fields and in a problem's violated-policies.
function policyName(rate) {
  const s = rate.periodMs / 1000;
  let duration;
  if (s < 60) duration = `${s}sec`;
  else if (s < 3600) duration = `${s / 60}min`;
  else if (s < 86400) duration = `${s / 3600}hr${s > 3600 ? 's' : ''}`;
  else duration = `${s / 86400}day${s > 86400 ? 's' : ''}`;
  return `${rate.limit}-in-${duration}`;
}

// The body of a refusal: { type, text, bytes, length } made once; one per rate for problem+json (which names the
// violated rate). The adapters send the text where they can: Node writes a string body in one chunk with the head.
function denialBodies(options, quotas, statusCode) {
  const { message, problem } = options;
  if (problem) {
    const detail = typeof message === 'string' ? message : 'Too many requests, please try again later.';
    const body = (violated) => textBody(JSON.stringify({
      type: QUOTA_EXCEEDED,
      title: 'Request cannot be satisfied as assigned quota has been exceeded',
      status: statusCode,
      detail,
      ...(violated ? { 'violated-policies': [violated] } : {}),
    }));
    const type = 'application/problem+json';
    return { byRate: quotas.map((q) => ({ type, ...body(q.name) })), unknown: { type, ...body(undefined) } };
  }
  const text = typeof message === 'string';
  const one = {
    type: text ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
    ...textBody(text ? message : JSON.stringify(message)),
  };
  return { byRate: quotas.map(() => one), unknown: one };
}

function checkOptions(options) {
  if (options === null || typeof options !== 'object') throw invalidArgument('rateLimit options must be an object');
  knownOptions('rateLimit', options, KNOWN);
  const o = {
    key: 'ip', message: 'Too many requests, please try again later.', statusCode: 429, problem: false,
    headers: 'draft-8', legacyHeaders: false, onStoreError: 'allow', ipv6Subnet: DEFAULT_IPV6_SUBNET,
    skippedHeader: 'RateLimit-Skipped', shadow: false, logger: console, logInterval: 10000,
  };
  for (const name of Object.keys(options)) if (options[name] !== undefined) o[name] = options[name];  // undefined: the default
  for (const name of ['skip', 'handler', 'onKeyError']) optionalFunction(name, o[name]);
  if (o.headers !== false && !STYLES.includes(o.headers)) {
    throw invalidArgument(`headers must be false or one of ${STYLES.map((s) => `"${s}"`).join(', ')}, got ${JSON.stringify(o.headers)}`);
  }
  if (!Number.isInteger(o.ipv6Subnet) || o.ipv6Subnet < 8 || o.ipv6Subnet > 128) {
    throw invalidArgument(`ipv6Subnet must be an integer between 8 and 128, got ${JSON.stringify(o.ipv6Subnet)}`);
  }
  // A denial is a client or server error: any other status (a 2xx, or none at all) would not tell the client it was
  // refused, and Node refuses one outside 100-999 only when it is sent.
  if (!(Number.isInteger(o.statusCode) && o.statusCode >= 400 && o.statusCode <= 599)) {
    throw invalidArgument(`statusCode must be an integer between 400 and 599, got ${JSON.stringify(o.statusCode)}`);
  }
  if (!['allow', 'deny', 'raise'].includes(o.onStoreError)) {
    throw invalidArgument(`onStoreError must be one of "allow", "deny", "raise", got ${JSON.stringify(o.onStoreError)}`);
  }
  if (o.skippedHeader !== false && !(typeof o.skippedHeader === 'string' && /^[A-Za-z0-9-]+$/.test(o.skippedHeader))) {
    throw invalidArgument(`skippedHeader must be a header name or false, got ${JSON.stringify(o.skippedHeader)}`);
  }
  for (const name of ['problem', 'shadow', 'legacyHeaders']) {
    if (typeof o[name] !== 'boolean') throw invalidArgument(`${name} must be true or false, got ${JSON.stringify(o[name])}`);
  }
  if (o.logger === null || typeof o.logger !== 'object' && typeof o.logger !== 'function' ||
      typeof o.logger.warn !== 'function') {
    throw invalidArgument('logger must have a warn(message) method (console, pino, winston ...)');
  }
  if (!(Number.isFinite(o.logInterval) && o.logInterval >= 0)) {
    throw invalidArgument(`logInterval must be a number of milliseconds >= 0, got ${JSON.stringify(o.logInterval)}`);
  }
  if (o.countWhen !== undefined && !COUNT_WHEN.includes(o.countWhen) && typeof o.countWhen !== 'function') {
    throw invalidArgument(`countWhen must be "failure", "success" or a function, got ${JSON.stringify(o.countWhen)}`);
  }
  for (const name of ['allowList', 'denyList']) {
    if (o[name] !== undefined && !(o[name] instanceof KeyList)) throw invalidArgument(`${name} must be a KeyList`);
  }
  if (o.blockDuration !== undefined) positiveInteger('blockDuration', o.blockDuration);
  if (typeof o.message !== 'string' && (o.message === null || typeof o.message !== 'object')) {
    throw invalidArgument('message must be a string or an object (sent as JSON)');
  }
  return o;
}

// Route names kept per limiter, past which a new one is made per request (a router mounted on a path with
// parameters names its routes by the values it met: docs/node.md); and named Limiters, past which the limiter's
// own counts the rest.
const ROUTE_NAMES = 1000;

class HttpLimiter {
  // access: { framework, ip(a), header(a, name), user(a), body(a), route(a) } — how the adapter reads a request;
  // route(a) is the path template of the route the request is in, or undefined outside a route. `route`: the
  // template of the one route this limiter is made for (Fastify), in place of route(a).
  constructor(options, access, route) {
    const o = checkOptions(options);
    const policy = policyOf(o);
    // Checked now, as the Limiter would check them; its Limiters are made on their first request (#limiterOf).
    const checked = limiterOptions({ policy, store: scopedStore(o.store, o.scope) ?? 'memory://', algorithm: o.algorithm,
      burst: o.burst, buckets: o.buckets, prefix: o.prefix, onStoreError: 'raise' });  // the store-error policy is applied here
    this.store = storeFor(checked.store);
    const rates = native.policiesOf(policy, checked.native);
    this.limiterOptions = { ...checked.native, policy, store: this.store };
    this.limiters = new Map();  // name -> Limiter
    this.sync = this.store.inMemory;
    this.quotas = rates.map((r) => ({ name: policyName(r), limit: r.limit, periodMs: r.periodMs }));
    this.style = o.headers;
    this.legacy = o.legacyHeaders;
    this.ownFields = new Fields([this.quotas], o.headers, o.legacyHeaders);  // when this is the only limiter
    this.makeKey = keyMaker(o.key, access, o.ipv6Subnet);
    this.needsBody = needsBody(o.key);
    const counted = rates.map((r) => `${r.algorithm}:${r.limit}:${r.periodMs}:${r.capacity}`).join(';');
    const signature = `${counted}|${o.buckets ?? ''}|${o.ipv6Subnet}|${describeSpec(o.key)}`;
    const { scope, token } = scopeFor(o.scope, signature, this.store);
    this.scope = scope;
    this.token = token;
    // Its figures count under what its keys count under and its rates (http_limiter_name.js).
    this.rates = ratesText(rates);
    // The scope of a request outside a route: the limiter's own.
    const text = `${scope}:`;
    this.own = { scopeText: text, scopeBytes: Buffer.from(text), name: limiterName(scope, this.rates),
      limiter: undefined };
    // Without a scope, a limiter in a route counts under the route's name (route_name.js), as every adapter of
    // every language does: ranked among the request's route limiters ("/login", "/login#2"), as Python ranks a
    // route's limits.
    this.routeOf = o.scope !== undefined ? undefined : route !== undefined ? () => route : access.route;
    this.routeScopes = new Map();  // `${rank} ${template}` -> { scopeText, scopeBytes, name, limiter }
    this.skip = o.skip;
    this.handler = o.handler;
    this.onKeyError = o.onKeyError;
    this.shadow = o.shadow;
    this.onStoreError = o.onStoreError;
    this.skippedHeader = o.skippedHeader;
    this.countWhen = o.countWhen;
    // Looked up before the limit (docs/key-lists.md): an allowed client skips it, a denied one is refused (403),
    // and with blockDuration a client refused by the limit stays refused that long (429), on every process.
    this.allowList = o.allowList;
    this.denyList = o.denyList;
    this.blocked = o.blockDuration === undefined ? undefined
      : new KeyList({ name: 'blocked', store: this.store, durationMs: o.blockDuration });
    this.lookups = this.allowList !== undefined || this.denyList !== undefined || this.blocked !== undefined;
    this.statusCode = o.statusCode;
    this.bodies = denialBodies(o, this.quotas, o.statusCode);
    this.log = new ThrottledLog(o.logger, `ratewarden/${access.framework}`, o.logInterval);
    // What this limiter did, for metrics and tests.
    this.metrics = { allowed: 0, denied: 0, shadowDenied: 0, skipped: 0, keyErrors: 0, storeErrors: 0, refunded: 0,
      allowListed: 0, denyListed: 0, blocked: 0 };
    this.framework = access.framework;
    this.logger = o.logger;
    this.storeErrorsLogged = 0;  // metrics.storeErrors when the store last recovered (http_store_log.js)
    // The store's failures and recoveries are logged from the core's events (http_store_log.js), once per change.
    watchStore(this);
  }

  // The Limiter whose figures count a scope's decisions (named scope.name), made on the scope's first request: a
  // Limiter's name is in the process's figures from its creation on, so none is made for a scope never used.
  // Limiters of one HttpLimiter share its store, policy and prefix: they count the same counters.
  #limiterOf(scope) {
    let limiter = this.limiters.get(scope.name);
    if (limiter === undefined) {
      if (this.limiters.size >= ROUTE_NAMES && scope !== this.own) return this.#limiterOf(this.own);
      limiter = new Limiter({ ...this.limiterOptions, name: scope.name });
      this.limiters.set(scope.name, limiter);
    }
    scope.limiter = limiter;
    return limiter;
  }

  // What requests get while the store fails, in the log's words; undefined with onStoreError 'raise' (the error
  // goes to the framework's error handling, which has its own log).
  get failureOutcome() {
    if (this.onStoreError === 'raise') return undefined;
    if (this.onStoreError === 'allow') return 'let through unlimited (fail open)';
    return this.shadow ? 'let through (fail closed, but shadow mode refuses nothing)' : 'refused (fail closed)';
  }

  // The plan for one request: (a, b) are the framework's request arguments (given to key, skip), `state` the
  // request's { counted, reports }. Returns the plan, or a Promise of it that never rejects.
  run(a, b, state) {
    // One count per request and scope, even when the same limiter (or scope) is met twice: mounted on the app and
    // on a router.
    if (state.counted.includes(this.token)) return PASS;
    state.counted.push(this.token);
    // Ranked among the request's route limiters whatever it then does (skip, no key): each keeps its name.
    const scope = this.#scoped(a, state);
    if (this.skip === undefined) return this.#keyed(a, b, state, scope);
    let skipped;
    try {
      skipped = this.skip(a, b);
    } catch (error) {
      return failure(error);
    }
    if (isPromise(skipped)) {
      return skipped.then((s) => this.#afterSkip(s, a, b, state, scope), failure);
    }
    return this.#afterSkip(skipped, a, b, state, scope);
  }

  #afterSkip(skipped, a, b, state, scope) {
    if (!skipped) return this.#keyed(a, b, state, scope);
    this.metrics.skipped++;
    return PASS;
  }

  #keyed(a, b, state, scope) {
    let k;
    try {
      k = this.makeKey(a, b);
    } catch (error) {
      return this.#keyError(error);
    }
    if (isPromise(k)) return k.then((v) => this.#decide(v, state, scope), (error) => this.#keyError(error));
    return this.#decide(k, state, scope);
  }

  // The key's scope ({ scopeText, scopeBytes, name, limiter }): the limiter's own, or the route's name when it is
  // in a route and names no scope (its figures then count under the route's name too).
  #scoped(a, state) {
    const template = this.routeOf === undefined ? undefined : this.routeOf(a);
    if (typeof template !== 'string') return this.own;
    const rank = ++state.routed;
    const id = `${rank} ${template}`;
    let scope = this.routeScopes.get(id);
    if (scope === undefined) {
      const name = routeName(template);
      const ranked = rank === 1 ? name : `${name}#${rank}`;
      const text = `${ranked}:`;
      scope = { scopeText: text, scopeBytes: Buffer.from(text), name: limiterName(ranked, this.rates),
        limiter: undefined };
      if (this.routeScopes.size < ROUTE_NAMES) this.routeScopes.set(id, scope);
    }
    return scope;
  }

  #decide(k, state, scope) {
    const key = typeof k === 'string' ? scope.scopeText + k : Buffer.concat([scope.scopeBytes, k]);
    const limiter = scope.limiter ?? this.#limiterOf(scope);
    return this.lookups ? this.#lookUp(k, key, state, limiter) : this.#hit(key, state, limiter);
  }

  // The lists first (one peek each on the store), then the limit; a refusal by the limit starts a block.
  async #lookUp(k, key, state, limiter) {
    try {
      if (this.allowList !== undefined && await this.allowList.has(k)) {
        this.metrics.allowListed++;
        return PASS;
      }
      if (this.denyList !== undefined && await this.denyList.has(k)) return this.#denyListed();
      const blockedMs = this.blocked === undefined ? 0 : await this.blocked.expiresInMs(key);
      if (blockedMs > 0) {
        this.metrics.blocked++;
        return this.#respond(this.#blockDecision(blockedMs), state, key, limiter);
      }
    } catch (error) {
      return this.#failed(error, limiter);
    }
    const plan = await this.#hit(key, state, limiter);
    if (plan.kind === DENY && this.blocked !== undefined && plan.decision !== undefined) {
      await this.blocked.add(key).catch((error) => {
        this.log.warn('block', `a block could not be stored (${error.code}: ${error.message})`);
      });
    }
    return plan;
  }

  #denyListed() {
    this.metrics.denyListed++;
    if (this.shadow) {
      this.log.warn('shadow', `shadow mode: a deny-listed client (scope ${this.scope}) would have been refused`);
      return PASS;
    }
    return { kind: DENY, fields: NONE, decision: undefined, status: 403, type: 'text/plain; charset=utf-8',
      body: FORBIDDEN.text, bytes: FORBIDDEN.bytes, length: FORBIDDEN.length };
  }

  // A blocked client's answer: the limit's first rate, exhausted until the block ends.
  #blockDecision(ms) {
    const { limit } = this.quotas[0];
    return { allowed: false, limit, remaining: 0, resetAfterMs: ms, retryAfterMs: ms, used: limit, policyIndex: 0,
      resetAfterUs: ms * 1000, retryAfterUs: ms * 1000 };
  }

  #hit(key, state, limiter) {
    if (this.sync) {
      let d;
      try {
        d = limiter.hitSync(key);
      } catch (error) {
        return this.#failed(error, limiter);
      }
      return this.#respond(d, state, key, limiter);
    }
    return limiter.hit(key).then((d) => this.#respond(d, state, key, limiter), (error) => this.#failed(error, limiter));
  }

  #respond(d, state, key, limiter) {
    const { reports } = state;
    reports.push({ quotas: this.quotas, decision: d });
    const now = this.legacy ? Date.now() : 0;
    let fields = reports.length === 1 ? this.ownFields.of([d], now) : rateLimitFields(reports, this.style, this.legacy, now);
    if (d.allowed) {
      this.metrics.allowed++;
      // A shadow denial earlier on the request is shown in the fields, but refused nothing.
      if (state.shadowed) fields = fields.filter(notRetryAfter);
      // With countWhen, the adapter calls settle() once the response is sent: `key` is what to give back.
      return { kind: NEXT, fields, decision: d, key: this.countWhen === undefined ? undefined : key, limiter };
    }
    if (this.shadow) {
      // Shadow mode: the fields as they would be, but no refusal, so no Retry-After either.
      this.metrics.shadowDenied++;
      state.shadowed = true;
      this.log.warn('shadow', `shadow mode: a request over ${this.quotas[d.policyIndex].name} (scope ${this.scope}) ` +
        'would have been refused');
      return { kind: NEXT, fields: fields.filter(notRetryAfter), decision: d };
    }
    this.metrics.denied++;
    const body = this.bodies.byRate[d.policyIndex] || this.bodies.unknown;
    return { kind: DENY, fields, decision: d, status: this.statusCode, type: body.type, body: body.text,
      bytes: body.bytes, length: body.length };
  }

  // Count only what matters: once the response to a request this limit counted is sent, the count is given back
  // (the core's refund, exact on every store) unless countWhen says the response counts — 'failure' (a status of
  // 400 or more: count failed logins only), 'success' (below 400), or a function of the request (may be async).
  // A client over the limit is still refused before its request runs.
  settle(plan, a, b, status) {
    let counts;
    try {
      counts = this.countWhen === 'failure' ? status >= 400
        : this.countWhen === 'success' ? status < 400 : this.countWhen(a, b);
    } catch (error) {
      this.log.warn('countWhen', `countWhen threw (the request stays counted): ${error && error.message}`);
      return;
    }
    if (!isPromise(counts)) {
      this.#giveBackUnless(counts, plan);
      return;
    }
    counts.then((c) => this.#giveBackUnless(c, plan), (error) => {
      this.log.warn('countWhen', `countWhen failed (the request stays counted): ${error && error.message}`);
    });
  }

  #giveBackUnless(counts, { key, limiter }) {
    if (counts) return;
    this.metrics.refunded++;
    limiter.refund(key).catch((error) => {
      // A store that cannot be reached or timed out is logged from the core's events (http_store_log.js): not a
      // second time for each count it could not give back.
      if (error.code in TOLD_BY_EVENTS) return;
      this.log.warn('refund', `a count could not be given back (${error.code}: ${error.message})`);
    });
  }

  #keyError(error) {
    this.metrics.keyErrors++;
    const why = error instanceof KeyError || error.code === 'ERR_RATEWARDEN_INVALID_ARGUMENT' ? error.message
      : `the key function threw: ${error && error.message}`;
    this.log.warn('key', `no rate-limit key for a request (scope ${this.scope}): ${why}`);
    return { kind: KEY_ERROR, fields: NONE, decision: undefined, error };
  }

  // A key the core refuses (over 4096 bytes) is a key error; a store failure goes by onStoreError.
  #failed(error, limiter) {
    if (error.code === 'ERR_RATEWARDEN_INVALID_ARGUMENT') return this.#keyError(error);
    if (!(error.code in SKIPPED)) return failure(error);
    this.metrics.storeErrors++;
    if (this.onStoreError === 'raise') return failure(error);
    // Counted where the core counts its own onStoreError decisions (ratewarden_decisions_total, fallbacks): a
    // refusal in shadow mode too, as a decision the store made would be.
    Limiter.countFallback(limiter, this.onStoreError === 'allow');
    // A store that cannot be reached (or timed out) is logged once when it fails and once when it answers again,
    // from the core's events (http_store_log.js); an error reply is no change of the store's health: logged here,
    // rate-limited.
    if (!(error.code in TOLD_BY_EVENTS)) {
      this.log.warn('store', `the store failed (${error.code}: ${error.message}); requests are ${this.failureOutcome} ` +
        'while it does');
    }
    const open = this.onStoreError === 'allow';
    if (open) {
      // No quota fields: none was computed. The field tells downstream that limiting was skipped, and why.
      return { kind: NEXT, fields: this.skippedHeader ? [[this.skippedHeader, SKIPPED[error.code]]] : NONE, decision: undefined };
    }
    if (this.shadow) return PASS;  // fail closed would refuse: shadow mode never does (as Python's)
    const body = this.bodies.unknown;
    return { kind: DENY, fields: [['Retry-After', '1']], decision: undefined, status: this.statusCode, type: body.type,
      body: body.text, bytes: body.bytes, length: body.length };
  }
}

const newState = () => ({ counted: [], reports: [], shadowed: false, routed: 0 });

module.exports = { HttpLimiter, newState, NEXT, DENY, KEY_ERROR, ERROR, QUOTA_EXCEEDED, KEY_ERROR_BODY };
