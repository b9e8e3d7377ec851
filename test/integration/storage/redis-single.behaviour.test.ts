import { startRedisStore } from '../../support/redis-stores.js';
import { describeCounterStore } from './store-behaviour.js';

describeCounterStore('Redis single', () => startRedisStore('single'));
