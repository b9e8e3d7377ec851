import { startRedisStore } from '../../support/redis-stores.js';
import { describeCounterStore } from './store-behaviour.js';

describeCounterStore('Redis cluster', () => startRedisStore('cluster'));
