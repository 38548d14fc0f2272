// Type test of the ESM entry points (tsc -p tests/node/types): default and named imports of each adapter.
import express from 'express';
import Fastify from 'fastify';
import Koa from 'koa';
import { Limiter, events, metricFamilies } from 'ratewarden';
import { register } from 'ratewarden/prometheus';
import { register as registerOtel, instruments } from 'ratewarden/opentelemetry';
import { rateLimit } from 'ratewarden/express';
import ratewarden from 'ratewarden/fastify';
import { rateLimit as koaRateLimit } from 'ratewarden/koa';

const limiter: Limiter = new Limiter({ policy: '1/second' });
express().use(rateLimit({ limit: 10, key: 'header:x-api-key' }));
await Fastify().register(ratewarden, { limit: 10 });
new Koa().use(koaRateLimit({ limit: 10, key: ['ip', 'user'] }));
events.on('event', (e) => console.log(e.kind));
console.log(limiter, register(), metricFamilies().length, registerOtel().active, instruments().length);
