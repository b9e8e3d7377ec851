// Types for the `cluster-key-slot` package (ioredis's dependency, without types of its own), which the
// tests use as an independent reference for Redis Cluster hash slots.
declare module 'cluster-key-slot' {
  function calculateSlot(key: string | Buffer): number;
  namespace calculateSlot {
    function generateMulti(keys: (string | Buffer)[]): number;
  }
  export = calculateSlot;
}
