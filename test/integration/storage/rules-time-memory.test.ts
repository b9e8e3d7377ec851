import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { describeRulesTime } from './rules-time-behaviour.js';

describeRulesTime('MemoryStore', () => Promise.resolve({ store: new MemoryStore({ maxKeys: 10_000 }) }));
