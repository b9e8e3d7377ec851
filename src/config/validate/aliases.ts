/**
 * Anchors and aliases of one YAML document, resolved once, with a budget on what aliases expand to.
 *
 * The validator walks the AST itself (to keep positions), so the YAML library's own alias limit never applies,
 * and its Alias.resolve scans the whole document on every call (quadratic in the number of aliases). Here one
 * post-order walk records, for every alias, the node it names (the last anchor of that name completed before
 * it, so an alias inside its own anchor is unknown rather than a cycle) and, for every node, the nodes of its
 * subtree (an alias in it counts as one: it is charged when it is followed in turn), kept for anchored nodes. Each dereference spends the
 * size of its target from the file's budget, so the budget is spent exactly as the validator visits nodes
 * through aliases; running out throws LimitExceeded at the alias.
 */
import { isAlias, isMap, isPair, isScalar, isSeq } from 'yaml';
import type { Alias, Document, Node } from 'yaml';
import { LimitExceeded } from '../limits.js';
import type { ConfigLimits } from '../limits.js';

export class AliasTable {
  private readonly targets = new Map<Alias, Node | undefined>();
  private readonly sizes = new WeakMap<Node, number>();
  private spent = 0;
  /** Aliases that name no anchor before them (an error, as in gopkg.in/yaml.v2), in document order. */
  readonly unknown: Alias[] = [];

  constructor(
    doc: Document,
    private readonly limits: ConfigLimits,
  ) {
    const anchors = new Map<string, Node>();
    this.walk(doc.contents, anchors, 0);
  }

  /** The node an alias names (undefined for an unknown anchor), charging its expanded size to the budget. */
  resolve(alias: Alias): Node | undefined {
    const target = this.targets.get(alias);
    if (target === undefined) return undefined;
    this.spent += this.sizes.get(target) ?? 1;
    if (this.spent > this.limits.maxAliasNodes) {
      throw new LimitExceeded(
        alias.range?.[0] ?? 0,
        `aliases expand to more than ${this.limits.maxAliasNodes} nodes (alias '*${alias.source}'); is this an alias bomb?`,
      );
    }
    return target;
  }

  private walk(node: unknown, anchors: Map<string, Node>, depth: number): number {
    if (node === null || node === undefined) return 1;
    if (isAlias(node)) {
      const target = anchors.get(node.source);
      this.targets.set(node, target);
      if (target === undefined) this.unknown.push(node);
      return 1;
    }
    let size = 1;
    if (isMap(node) || isSeq(node)) {
      if (depth >= this.limits.maxYamlDepth) {
        throw new LimitExceeded(node.range?.[0] ?? 0, `mappings and lists nested more than ${this.limits.maxYamlDepth} levels deep`);
      }
      for (const item of node.items as unknown[]) {
        if (isPair(item)) size += this.walk(item.key, anchors, depth + 1) + this.walk(item.value, anchors, depth + 1);
        else size += this.walk(item, anchors, depth + 1);
      }
    } else if (!isScalar(node)) {
      return 1;
    }
    const n = node as Node;
    // Only an anchored node can be an alias's target: the others' sizes are never looked up.
    if (n.anchor) {
      this.sizes.set(n, size);
      anchors.set(n.anchor, n);
    }
    return size;
  }
}
