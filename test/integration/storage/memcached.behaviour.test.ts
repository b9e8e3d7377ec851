import { startMemcachedStore } from '../../support/memcached-stores.js';
import { describeCounterStore } from './store-behaviour.js';

describeCounterStore('memcached (one server)', () => startMemcachedStore(1), ['fixed_window']);
describeCounterStore('memcached (three servers)', () => startMemcachedStore(3), ['fixed_window']);
