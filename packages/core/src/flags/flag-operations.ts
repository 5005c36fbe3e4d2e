import { failedPrecondition, invalidArgument } from '../errors/domain-error.ts';
import type { PercentageAllocation, Prerequisite, Rule } from '../model/definitions.ts';
import { hasDefaultRule } from './default-rule.ts';
import { checkPrerequisites } from './prerequisites.ts';

/**
 * Flag operations (docs/workflow.md "Operations"): changes to one environment's flag written as
 * intents rather than as a whole new state, so a change made now and applied later (a scheduled
 * change, an approved change request) still means what its author meant after unrelated edits:
 * "turn it on", "serve `on` from rule `beta`", "remove rule `old`". Only `set_rules` replaces the
 * whole list, and so it names the version it was made against.
 *
 * This module is pure: it checks shapes and applies operations to a state; the values (variants,
 * conditions, allocations) are checked by the flag write that stores the result, exactly as for a
 * person's write.
 */
export type FlagOperation =
  | { op: 'set_enabled'; enabled: boolean }
  | { op: 'set_off_variant'; variant_key: string | null }
  | { op: 'set_rule_serve'; rule_id: string; variant_key?: string; allocation?: PercentageAllocation }
  | { op: 'add_rule'; rule: Rule; before_rule_id?: string }
  | { op: 'remove_rule'; rule_id: string }
  | { op: 'set_rules'; rules: Rule[]; version?: number; ignore_conflicts?: boolean }
  | { op: 'set_prerequisites'; prerequisites: Prerequisite[] };

export const FLAG_OPERATION_NAMES = ['set_enabled', 'set_off_variant', 'set_rule_serve', 'add_rule', 'remove_rule', 'set_rules', 'set_prerequisites'] as const;

/** Operations in one change: a change is something a person reviews at a glance. */
export const MAX_FLAG_OPERATIONS = 50;

/** The part of a flag's environment state operations change. */
export interface OperableState {
  enabled: boolean;
  off_variant_key: string | null;
  rules: Rule[];
  /** Absent: none (set_prerequisites replaces the list). */
  prerequisites?: Prerequisite[];
  /** The environment's version of the flag (set_rules is checked against it). */
  version: number;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function onlyFields(value: Record<string, unknown>, allowed: readonly string[], path: string): void {
  for (const name of Object.keys(value)) if (!allowed.includes(name)) throw invalidArgument(`${path}.${name} is not a field of ${String(value.op)}`, `${path}.${name}`);
}

function ruleId(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '' || value.length > 128) throw invalidArgument(`${path} must be a rule id`, path);
  return value;
}

function ruleObject(value: unknown, path: string): Rule {
  if (!isObject(value)) throw invalidArgument(`${path} must be a rule object`, path);
  if (typeof value.id !== 'string' || value.id === '') throw invalidArgument(`${path}.id is required: an added rule is named so later operations can find it`, `${path}.id`);
  return value as unknown as Rule;
}

/**
 * The operations of a request body, their shapes checked (not their values: the write does).
 * @throws INVALID_ARGUMENT naming the operation (`operations[i]`).
 */
export function parseFlagOperations(input: unknown, field = 'operations'): FlagOperation[] {
  if (!Array.isArray(input) || input.length === 0) throw invalidArgument(`${field} must be a list of 1 to ${MAX_FLAG_OPERATIONS} operations`, field);
  if (input.length > MAX_FLAG_OPERATIONS) throw invalidArgument(`${field} holds at most ${MAX_FLAG_OPERATIONS} operations`, field);
  return input.map((raw, i): FlagOperation => {
    const path = `${field}[${i}]`;
    if (!isObject(raw)) throw invalidArgument(`${path} must be an object with an op`, path);
    switch (raw.op) {
      case 'set_enabled':
        onlyFields(raw, ['op', 'enabled'], path);
        if (typeof raw.enabled !== 'boolean') throw invalidArgument(`${path}.enabled must be a boolean`, `${path}.enabled`);
        return { op: 'set_enabled', enabled: raw.enabled };
      case 'set_off_variant':
        onlyFields(raw, ['op', 'variant_key'], path);
        if (raw.variant_key !== null && typeof raw.variant_key !== 'string') throw invalidArgument(`${path}.variant_key must be a variant key or null`, `${path}.variant_key`);
        return { op: 'set_off_variant', variant_key: raw.variant_key };
      case 'set_rule_serve': {
        onlyFields(raw, ['op', 'rule_id', 'variant_key', 'allocation'], path);
        const hasVariant = raw.variant_key !== undefined && raw.variant_key !== null;
        const hasAllocation = raw.allocation !== undefined && raw.allocation !== null;
        if (hasVariant === hasAllocation) throw invalidArgument(`${path} must have exactly one of variant_key or allocation`, path);
        if (hasVariant && typeof raw.variant_key !== 'string') throw invalidArgument(`${path}.variant_key must be a variant key`, `${path}.variant_key`);
        if (hasAllocation && !isObject(raw.allocation)) throw invalidArgument(`${path}.allocation must be an allocation object`, `${path}.allocation`);
        const id = ruleId(raw.rule_id, `${path}.rule_id`);
        return hasVariant ? { op: 'set_rule_serve', rule_id: id, variant_key: raw.variant_key as string } : { op: 'set_rule_serve', rule_id: id, allocation: raw.allocation as unknown as PercentageAllocation };
      }
      case 'add_rule': {
        onlyFields(raw, ['op', 'rule', 'before_rule_id'], path);
        const rule = ruleObject(raw.rule, `${path}.rule`);
        if (raw.before_rule_id === undefined || raw.before_rule_id === null) return { op: 'add_rule', rule };
        return { op: 'add_rule', rule, before_rule_id: ruleId(raw.before_rule_id, `${path}.before_rule_id`) };
      }
      case 'remove_rule':
        onlyFields(raw, ['op', 'rule_id'], path);
        return { op: 'remove_rule', rule_id: ruleId(raw.rule_id, `${path}.rule_id`) };
      case 'set_rules': {
        onlyFields(raw, ['op', 'rules', 'version', 'ignore_conflicts'], path);
        if (!Array.isArray(raw.rules)) throw invalidArgument(`${path}.rules must be a list of rules`, `${path}.rules`);
        if (raw.ignore_conflicts !== undefined && typeof raw.ignore_conflicts !== 'boolean') throw invalidArgument(`${path}.ignore_conflicts must be a boolean`, `${path}.ignore_conflicts`);
        const ignore = raw.ignore_conflicts === true;
        if (raw.version === undefined || raw.version === null) {
          if (!ignore) throw invalidArgument(`${path}.version is required (the flag's version the rules were written against), unless ignore_conflicts is true`, `${path}.version`);
          return { op: 'set_rules', rules: raw.rules as Rule[], ignore_conflicts: true };
        }
        if (typeof raw.version !== 'number' || !Number.isSafeInteger(raw.version) || raw.version < 0) throw invalidArgument(`${path}.version must be an integer >= 0`, `${path}.version`);
        return { op: 'set_rules', rules: raw.rules as Rule[], version: raw.version, ...(ignore ? { ignore_conflicts: true } : {}) };
      }
      case 'set_prerequisites':
        onlyFields(raw, ['op', 'prerequisites'], path);
        // The shape here (the flag's own key is checked by the write, which knows it); the
        // references, cycles and chain length by the repository's write, as for a person's.
        return { op: 'set_prerequisites', prerequisites: checkPrerequisites('', raw.prerequisites, `${path}.prerequisites`) };
      default:
        throw invalidArgument(`${path}.op must be one of ${FLAG_OPERATION_NAMES.join(', ')}`, `${path}.op`);
    }
  });
}

/**
 * The state after the operations, in order. Each operation is checked against the state the ones
 * before it left: a rule it names must exist (set_rule_serve, remove_rule, add_rule's
 * before_rule_id), a rule it adds must not, and set_rules must have been made against the current
 * version (unless ignore_conflicts).
 * @throws FAILED_PRECONDITION naming the operation and what changed since it was made (a conflict).
 */
export function applyFlagOperations(state: OperableState, operations: readonly FlagOperation[]): Omit<OperableState, 'version'> {
  let prerequisites = state.prerequisites;
  let enabled = state.enabled;
  let offVariantKey = state.off_variant_key;
  let rules = [...state.rules];
  const conflict = (i: number, why: string) => failedPrecondition(`operations[${i}] (${operations[i]!.op}) no longer applies: ${why}`);
  const indexOf = (id: string) => rules.findIndex((rule) => rule.id === id);
  operations.forEach((operation, i) => {
    switch (operation.op) {
      case 'set_enabled':
        enabled = operation.enabled;
        break;
      case 'set_off_variant':
        offVariantKey = operation.variant_key;
        break;
      case 'set_rule_serve': {
        const at = indexOf(operation.rule_id);
        if (at < 0) throw conflict(i, `the flag has no rule '${operation.rule_id}' any more`);
        const { variant_key: _variant, allocation: _allocation, ...targeting } = rules[at]!;
        rules[at] = operation.variant_key !== undefined ? { ...targeting, variant_key: operation.variant_key } : { ...targeting, allocation: operation.allocation! };
        break;
      }
      case 'add_rule': {
        if (indexOf(operation.rule.id) >= 0) throw conflict(i, `the flag already has a rule '${operation.rule.id}'`);
        let at: number;
        if (operation.before_rule_id !== undefined) {
          at = indexOf(operation.before_rule_id);
          if (at < 0) throw conflict(i, `the flag has no rule '${operation.before_rule_id}' to add it before`);
        } else {
          // Above the default rule (the unconditional last one), which must stay last to stay the default.
          at = hasDefaultRule(rules) ? rules.length - 1 : rules.length;
        }
        rules = [...rules.slice(0, at), operation.rule, ...rules.slice(at)];
        break;
      }
      case 'remove_rule': {
        const at = indexOf(operation.rule_id);
        if (at < 0) throw conflict(i, `the flag has no rule '${operation.rule_id}' any more`);
        rules = rules.filter((_, j) => j !== at);
        break;
      }
      case 'set_rules':
        if (operation.ignore_conflicts !== true && operation.version !== state.version) {
          throw conflict(i, `the rules were written against version ${operation.version} and the flag is at version ${state.version} (send ignore_conflicts to replace them anyway)`);
        }
        rules = [...operation.rules];
        break;
      case 'set_prerequisites':
        prerequisites = [...operation.prerequisites];
        break;
    }
  });
  return { enabled, off_variant_key: offVariantKey, rules, ...(prerequisites === undefined ? {} : { prerequisites }) };
}

/**
 * What the operations touch, for finding pending changes that would contend: `enabled`,
 * `off_variant`, `rule:<id>` for a rule named, `rules` for set_rules (every rule), `rule-order`
 * for an added rule (the list's order) and `prerequisites` for set_prerequisites (the whole list).
 */
export function operationTargets(operations: readonly FlagOperation[]): Set<string> {
  const targets = new Set<string>();
  for (const operation of operations) {
    switch (operation.op) {
      case 'set_enabled':
        targets.add('enabled');
        break;
      case 'set_off_variant':
        targets.add('off_variant');
        break;
      case 'set_rule_serve':
      case 'remove_rule':
        targets.add(`rule:${operation.rule_id}`);
        break;
      case 'add_rule':
        targets.add(`rule:${operation.rule.id}`);
        targets.add('rule-order');
        break;
      case 'set_rules':
        targets.add('rules');
        break;
      case 'set_prerequisites':
        targets.add('prerequisites');
        break;
    }
  }
  return targets;
}

/** Whether two changes contend: they touch the same thing, or one replaces every rule and the other names one. */
export function operationsContend(a: readonly FlagOperation[], b: readonly FlagOperation[]): boolean {
  const left = operationTargets(a);
  const right = operationTargets(b);
  const touchesRules = (targets: Set<string>) => [...targets].some((target) => target === 'rules' || target === 'rule-order' || target.startsWith('rule:'));
  if ((left.has('rules') && touchesRules(right)) || (right.has('rules') && touchesRules(left))) return true;
  for (const target of left) if (target !== 'rule-order' && right.has(target)) return true;
  return false;
}
