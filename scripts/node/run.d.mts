/** Types of run.mjs (plain JavaScript, so that it runs under any Node before TypeScript is installed). */
export declare const NODE_VERSION: string;
export declare function cacheDir(env?: NodeJS.ProcessEnv): string;
export declare function findNode(env?: NodeJS.ProcessEnv): string | undefined;
export declare function installNode(env?: NodeJS.ProcessEnv): string;
