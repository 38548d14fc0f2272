// Types of require('ratewarden/opentelemetry'). The reference is docs/observability.md ("OpenTelemetry").

import type { MeterProvider } from '@opentelemetry/api';

/** One instrument that register() creates, derived from one of the core's metric families. */
export interface Instrument {
  /** The OpenTelemetry name: 'ratewarden.decisions' for the family 'ratewarden_decisions_total'. */
  readonly name: string;
  /** Observable counter, up-down counter or gauge. */
  readonly kind: 'counter' | 'upDownCounter' | 'gauge';
  /** 's', or what is counted in braces ('{decision}'). */
  readonly unit: string;
  readonly description: string;
  /** The core's family it reads (require('ratewarden').metricFamilies()). */
  readonly family: string;
  /** What of the family: its values, or a histogram's count or sum. */
  readonly part: 'value' | 'count' | 'sum';
}

/** What register() made on one meter provider. */
export interface Registration {
  readonly meterProvider: MeterProvider;
  readonly instruments: readonly Instrument[];
  /** False once unregister() stopped the instruments. */
  readonly active: boolean;
  /** Stops the instruments (they observe nothing from the next collection on); false if they were stopped. */
  unregister(): boolean;
}

/**
 * Creates the observable instruments of the core's figures on `meterProvider` (default: the API's global meter
 * provider, which must be the SDK's already), once per provider: again, the same registration, started again if it
 * was unregistered. Needs @opentelemetry/api, an optional peer dependency.
 */
export declare function register(meterProvider?: MeterProvider): Registration;

/** Every instrument register() creates. */
export declare function instruments(): Instrument[];

/** The OpenTelemetry name of a core family: without a counter's _total and the unit's _seconds, dots for _. */
export declare function instrumentName(family: string, type: 'counter' | 'gauge' | 'histogram', unit: string): string;
