// Types of require('ratewarden/prometheus'). The reference is docs/node.md ("Prometheus").

import type { Registry, RegistryContentType } from 'prom-client';

/**
 * Declares every metric family of the core (require('ratewarden').metricFamilies()) in `registry` (default:
 * prom-client's global registry), read at each scrape. Returns the families' names. Needs prom-client (an optional
 * peer dependency) only when no registry is given.
 */
export declare function register<T extends RegistryContentType>(registry?: Registry<T>): string[];
