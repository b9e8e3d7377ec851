/** Types of cache-dir.mjs. */
export declare function cachePath(name: string, env?: NodeJS.ProcessEnv): string;
