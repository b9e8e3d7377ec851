import { MemoryStore } from '../../../src/storage/memory/memory-store.js';
import { describeCounterStore } from './store-behaviour.js';

describeCounterStore('MemoryStore', () => Promise.resolve({ store: new MemoryStore({ maxKeys: 10_000 }) }));
