/**
 * The throttling benchmark's descriptors (a hard limit and its soft and elastic twins, far above any load, and
 * one elastic limit of 1 a day whose clients always borrow), shared by bench/throttling.ts (in process) and
 * bench/grpc-load.ts --scenarios throttling (over gRPC), so both measure the same rules.
 */
export const THROTTLING_DESCRIPTORS = `  - key: hard
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: soft
    rate_limit: {unit: second, requests_per_unit: 1000000000, throttling: {soft: 10%}}
  - key: elastic
    rate_limit: {unit: second, requests_per_unit: 1000000000, throttling: {elastic: {capacity: 4000000000, max: 2000000000}}}
  - key: borrowing
    rate_limit: {unit: day, requests_per_unit: 1, throttling: {elastic: {capacity: 4000000000, max: 4000000000}}}
`;
