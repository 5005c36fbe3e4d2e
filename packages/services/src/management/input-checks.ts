import { ORG_ROLES, invalidArgument, type OrgRole } from '@switchyard/core';

/**
 * Checks the services apply whatever the transport (REST validates the same by schema first;
 * gRPC messages arrive with proto defaults, so "" means absent).
 */
export function requireName(value: string | undefined, field = 'name'): string {
  const name = (value ?? '').trim();
  if (name === '') throw invalidArgument(`${field} is required`, field);
  if (name.length > 200) throw invalidArgument(`${field} must be at most 200 characters`, field);
  return name;
}

export function requireEmail(value: string | undefined): string {
  const email = (value ?? '').trim();
  if (email === '') throw invalidArgument('email is required', 'email');
  if (email.length > 320 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw invalidArgument('email is not a valid address', 'email');
  return email;
}

export function requirePassword(value: string | undefined): string {
  const password = value ?? '';
  if (password === '') throw invalidArgument('password is required', 'password');
  if (password.length < 8) throw invalidArgument('password must be at least 8 characters', 'password');
  // bcrypt reads at most 72 bytes; longer passwords would be silently truncated.
  if (Buffer.byteLength(password) > 72) throw invalidArgument('password must be at most 72 bytes', 'password');
  return password;
}

export function optionalRole(value: string | null | undefined, fallback: OrgRole): OrgRole {
  if (value === undefined || value === null || value === '') return fallback;
  if (!(ORG_ROLES as readonly string[]).includes(value)) throw invalidArgument('org_role must be org_admin or org_member', 'org_role');
  return value as OrgRole;
}
