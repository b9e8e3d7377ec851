/**
 * Checks an Envoy bootstrap (parsed YAML) against Envoy's own API protos, as Envoy's config loader does:
 * every field must exist in its message (proto name or JSON name), have the right type, and not be
 * deprecated; `Any` values are checked against the message their `@type` names; at most one field of each
 * oneof is set; protoc-gen-validate's `required` and `min_len` / `min_items` rules hold.
 *
 * The protos are those published in the npm package @grpc/grpc-js-xds (deps/envoy-api, with xds, udpa and
 * validate); the well-known types come from protobufjs.
 */
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);
const XDS_DEPS = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const INCLUDE = [
  dirname(require.resolve('protobufjs/package.json')),
  ...['envoy-api', 'xds', 'protoc-gen-validate', 'googleapis'].map((d) => join(XDS_DEPS, d)),
];

export class EnvoyProtos {
  private readonly root = new protobuf.Root();
  private readonly loadedDirs = new Set<string>();

  constructor() {
    this.root.resolvePath = (_origin, target) => INCLUDE.map((d) => join(d, target)).find((p) => existsSync(p)) ?? target;
    this.loadPackage('envoy.config.bootstrap.v3');
  }

  /** Loads every .proto of a package's folder (envoy.a.b.v3 → envoy/a/b/v3/*.proto); false if there is none. */
  private loadPackage(pkg: string): boolean {
    const rel = pkg.split('.').join('/');
    if (this.loadedDirs.has(rel)) return true;
    const dir = join(XDS_DEPS, 'envoy-api', rel);
    if (!existsSync(dir)) return false;
    this.loadedDirs.add(rel);
    this.root.loadSync(
      readdirSync(dir)
        .filter((f) => f.endsWith('.proto'))
        .map((f) => join(rel, f)),
      { keepCase: true },
    );
    this.root.resolveAll();
    return true;
  }

  /** The message named by an `Any`'s `@type` (type.googleapis.com/full.name), loading its package on demand. */
  private anyType(url: string): protobuf.Type | undefined {
    const name = url.replace(/^type\.googleapis\.com\//, '');
    const pkg = name.split('.').slice(0, -1).join('.');
    if (!this.loadPackage(pkg)) return undefined;
    try {
      return this.root.lookupType(name);
    } catch {
      return undefined;
    }
  }

  /** Problems found in `value` read as a message of type `typeName`; empty when it is valid. */
  check(typeName: string, value: unknown): string[] {
    const errors: string[] = [];
    this.message(this.root.lookupType(typeName), value, '', errors);
    return errors;
  }

  private message(type: protobuf.Type, value: unknown, path: string, errors: string[]): void {
    const name = type.fullName.slice(1);
    const here = path === '' ? '(root)' : path;
    switch (name) {
      case 'google.protobuf.Duration':
        if (typeof value !== 'string' || !/^-?\d+(\.\d{1,9})?s$/.test(value))
          errors.push(`${here}: expected a duration such as "0.25s", got ${JSON.stringify(value)}`);
        return;
      case 'google.protobuf.Struct':
        if (!isObject(value)) errors.push(`${here}: expected an object`);
        return;
      case 'google.protobuf.Value':
        return;
      case 'google.protobuf.Any': {
        if (!isObject(value) || typeof value['@type'] !== 'string') {
          errors.push(`${here}: expected an object with "@type"`);
          return;
        }
        const inner = this.anyType(value['@type']);
        if (inner === undefined) {
          errors.push(`${here}: unknown @type ${value['@type']}`);
          return;
        }
        const { '@type': _, ...rest } = value;
        this.message(inner, rest, path, errors);
        return;
      }
    }
    if (/^google\.protobuf\.\w+Value$/.test(name)) {
      this.scalar(type.fields['value']!, value, here, errors);
      return;
    }
    if (!isObject(value)) {
      errors.push(`${here}: expected a ${name} object, got ${JSON.stringify(value)}`);
      return;
    }
    const byName = new Map<string, protobuf.Field>();
    for (const f of type.fieldsArray) {
      byName.set(f.name, f);
      byName.set((f.options?.['json_name'] as string | undefined) ?? camel(f.name), f);
    }
    const seen = new Set<protobuf.Field>();
    for (const [key, v] of Object.entries(value)) {
      const field = byName.get(key);
      const at = path === '' ? key : `${path}.${key}`;
      if (field === undefined) {
        errors.push(`${at}: no field '${key}' in ${name}`);
        continue;
      }
      seen.add(field);
      if (field.options?.['deprecated'] === true) errors.push(`${at}: ${name}.${field.name} is deprecated`);
      this.field(field, v, at, errors);
    }
    for (const oneof of type.oneofsArray) {
      const set = oneof.fieldsArray.filter((f) => seen.has(f));
      if (set.length > 1) errors.push(`${here}: ${set.map((f) => f.name).join(' and ')} are one of '${oneof.name}' (set only one)`);
      if (set.length === 0 && oneof.options?.['(validate.required)'] === true)
        errors.push(`${here}: one of ${oneof.fieldsArray.map((f) => f.name).join(' | ')} is required in ${name}`);
    }
    for (const f of type.fieldsArray) {
      // Inside a oneof the rule applies only to the member that is set.
      if (!seen.has(f) && f.partOf === null && f.options?.['(validate.rules).message.required'] === true) errors.push(`${here}: ${name}.${f.name} is required`);
    }
  }

  private field(field: protobuf.Field, value: unknown, at: string, errors: string[]): void {
    field.resolve();
    const one = (v: unknown, p: string) => {
      if (field.resolvedType instanceof protobuf.Type) this.message(field.resolvedType, v, p, errors);
      else if (field.resolvedType instanceof protobuf.Enum) {
        if (!(typeof v === 'string' && v in field.resolvedType.values) && !(typeof v === 'number' && Object.values(field.resolvedType.values).includes(v))) {
          errors.push(`${p}: '${String(v)}' is not one of ${Object.keys(field.resolvedType.values).join(', ')}`);
        }
      } else this.scalar(field, v, p, errors);
    };
    if (field.map) {
      if (!isObject(value)) errors.push(`${at}: expected a map`);
      else for (const [k, v] of Object.entries(value)) one(v, `${at}.${k}`);
    } else if (field.repeated) {
      if (!Array.isArray(value)) errors.push(`${at}: expected a list`);
      else {
        const min = field.options?.['(validate.rules).repeated.min_items'] as number | undefined;
        if (min !== undefined && value.length < min) errors.push(`${at}: needs at least ${min} item(s)`);
        value.forEach((v, i) => one(v, `${at}[${i}]`));
      }
    } else one(value, at);
  }

  private scalar(field: protobuf.Field, value: unknown, at: string, errors: string[]): void {
    const t = field.type;
    const ok =
      t === 'string' || t === 'bytes'
        ? typeof value === 'string'
        : t === 'bool'
          ? typeof value === 'boolean'
          : t === 'double' || t === 'float'
            ? typeof value === 'number'
            : /64$/.test(t)
              ? Number.isInteger(value) || (typeof value === 'string' && /^-?\d+$/.test(value))
              : Number.isInteger(value) && ((!t.startsWith('u') && !t.startsWith('fixed')) || (value as number) >= 0);
    if (!ok) errors.push(`${at}: expected ${t}, got ${JSON.stringify(value)}`);
    const minLen = field.options?.['(validate.rules).string.min_len'] as number | undefined;
    if (ok && typeof value === 'string' && minLen !== undefined && value.length < minLen) errors.push(`${at}: must not be shorter than ${minLen}`);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function camel(s: string): string {
  return s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
