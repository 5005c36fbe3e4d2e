import { isDomainError, permissionDenied, type AuditActor, type AuthProvider, type PasswordHasher, type Repositories, type User } from '@switchyard/core';
import { proveAddress } from '../accounts/address-claim.ts';
import { domainOfEmail } from '../org-domains/org-domain-service.ts';
import { generateRefreshToken } from '../auth/secrets.ts';
import { recordChange } from '../audit/audit-trail.ts';
import { userRecord, type UserRecord } from '../management/records.ts';

/** What an identity provider said about the person signing in. */
export interface ProviderIdentity {
  subject: string;
  email: string | null;
  /** OIDC's email_verified (true only when the provider says so); SAML: true (the org vouches for its IdP). */
  emailVerified: boolean;
  displayName: string | null;
  /** The groups the provider says the person has (OIDC claim or SAML attribute; docs/sso.md "Group mapping"). */
  groups?: readonly string[];
}

const MAX_SUBJECT_LENGTH = 255;
const EMAIL = /^[^\s@]+@[^\s@]+$/;
/** C0 controls and DEL: never part of an identifier, and U+0000 cannot be stored at all. */
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/g;
const hasControlCharacters = (text: string): boolean => text.search(CONTROL_CHARACTERS) !== -1;

/**
 * Which account a provider's identity is (docs/sso.md "Accounts"):
 * 1. a subject bound to an account before is that account, if it is still a member of the
 *    provider's org (a removed member stays removed: it needs a new invitation);
 * 2. otherwise an existing account with the same email is bound, only if it already belongs to
 *    the provider's org, the provider links existing accounts, and it verified the email: an org's
 *    provider must never reach an account of another org;
 * 3. otherwise a new account is created in the provider's org with its default role, bound to
 *    the subject, with an unusable random password (it signs in through the provider).
 *
 * When the provider's org has verified the address's domain (DNS TXT, docs/security.md "Domains
 * an org proved") and the provider vouches for the address (OIDC email_verified; SAML always),
 * the assertion is proof of the address: a new account is created verified, and an account of
 * that address made by someone else and never verified is claimed for the org (step 2b: it leaves
 * every other org, its password becomes unusable, its sessions end; audited). A verified account
 * outside the org still joins only by invitation.
 */
export class SsoAccounts {
  constructor(
    private readonly repos: Pick<Repositories, 'ssoIdentities' | 'users' | 'orgDomains' | 'unitOfWork'>,
    private readonly hasher: PasswordHasher,
    private readonly now: () => number,
    /** Told each user whose sessions a claim ended (the account, and users of a claimed admin's providers), after the commit. */
    private readonly onSessionsEnded: (userId: string) => Promise<void> = async () => {},
    /** The public URL providers are described with in the change history (a claimed admin's are withdrawn). */
    private readonly publicUrl?: string,
  ) {}

  /** Whether the provider's org verified the address's domain. */
  private domainVerified(provider: AuthProvider, email: string): Promise<boolean> {
    return this.repos.orgDomains.isVerified({ orgId: provider.orgId }, domainOfEmail(email));
  }

  async resolve(provider: AuthProvider, identity: ProviderIdentity): Promise<string> {
    if (identity.subject === '' || identity.subject.length > MAX_SUBJECT_LENGTH || hasControlCharacters(identity.subject)) {
      throw permissionDenied('the identity provider sent no usable subject identifier');
    }
    try {
      return await this.resolveOnce(provider, identity);
    } catch (error) {
      // A concurrent first sign-in of the same person bound or created it first: use that.
      if (isDomainError(error) && error.code === 'ALREADY_EXISTS') return this.resolveOnce(provider, identity);
      throw error;
    }
  }

  private async resolveOnce(provider: AuthProvider, identity: ProviderIdentity): Promise<string> {
    const bound = await this.repos.ssoIdentities.findUser(provider.id, identity.subject);
    if (bound !== null) {
      if (!(await this.repos.users.getMembership(provider.orgId, bound))) {
        throw permissionDenied('this account is no longer a member of the organisation; ask an admin for an invitation');
      }
      return bound;
    }
    const email = identity.email?.trim() ?? '';
    if (!EMAIL.test(email) || email.length > 320 || hasControlCharacters(email)) {
      throw permissionDenied('the identity provider did not send a usable email address');
    }

    const proved = identity.emailVerified && (await this.domainVerified(provider, email));
    const existing = await this.repos.users.getByEmail(email);
    if (existing) {
      if (!(await this.repos.users.getMembership(provider.orgId, existing.id))) {
        // A claim takes over an existing account: only a provider that may link existing accounts
        // (which took a second admin's confirmation to enable, docs/sso.md "Confirmation").
        if (proved && existing.emailVerifiedAtMs === null && provider.linkExistingAccounts) return this.claim(provider, identity, existing);
        throw permissionDenied('an account with this email exists outside this organisation; it can join by invitation');
      }
      if (!provider.linkExistingAccounts) {
        throw permissionDenied('an account with this email already exists in this organisation, and this provider does not link existing accounts');
      }
      if (!identity.emailVerified) throw permissionDenied('the identity provider has not verified this email address');
      await this.repos.unitOfWork.run(async (tx) => {
        await tx.ssoIdentities.bind({ providerId: provider.id, subject: identity.subject, userId: existing.id });
        if (proved) await tx.users.markEmailVerified(existing.id, this.now());
        await this.audit(tx, provider, { type: 'user', id: existing.id, email: existing.email }, 'sso.account_linked', identity.subject, null);
      });
      return existing.id;
    }

    const displayName = ((identity.displayName ?? '').replace(CONTROL_CHARACTERS, '').trim() || email.split('@')[0] || email).slice(0, 200);
    const passwordHash = await this.hasher.hash(generateRefreshToken());
    return this.repos.unitOfWork.run(async (tx) => {
      const { user, membership } = await tx.ssoIdentities.provision({
        providerId: provider.id,
        subject: identity.subject,
        orgId: provider.orgId,
        role: provider.defaultRole,
        email,
        displayName,
        passwordHash,
      });
      if (proved) await tx.users.markEmailVerified(user.id, this.now());
      await this.audit(tx, provider, { type: 'user', id: user.id, email: user.email }, 'sso.account_created', identity.subject, userRecord(user, membership));
      return user.id;
    });
  }

  /**
   * Step 2b: the org proved the address's domain and its provider vouches for the address, and the
   * account of that address was never verified: someone else made it. It becomes the org's
   * member's: it leaves every other org (the holder, signing in through its own org, kept none),
   * gets an unusable password (the maker's stops working), its sessions end, and it is bound.
   */
  private async claim(provider: AuthProvider, identity: ProviderIdentity, existing: User): Promise<string> {
    const passwordHash = await this.hasher.hash(generateRefreshToken());
    const nowMs = this.now();
    const ended = await this.repos.unitOfWork.run(async (tx) => {
      const current = await tx.users.getById(existing.id);
      // Verified meanwhile (its holder proved it by mail): no claim any more.
      if (!current || current.emailVerifiedAtMs !== null) throw permissionDenied('an account with this email exists outside this organisation; it can join by invitation');
      const { released, sessionsEndedFor } = await proveAddress(tx, current, { passwordHash, keepOrgIds: [], how: 'sso_domain', nowMs, publicUrl: this.publicUrl });
      const membership = await tx.users.addMembership({ orgId: provider.orgId, userId: current.id, role: provider.defaultRole });
      await tx.ssoIdentities.bind({ providerId: provider.id, subject: identity.subject, userId: current.id });
      await recordChange(tx, { type: 'user', id: current.id, email: current.email }, {
        orgId: provider.orgId,
        action: 'sso.account_claimed',
        resourceType: 'user',
        resourceId: current.id,
        after: userRecord(current, membership),
        details: { provider_id: provider.id, subject: identity.subject, domain: domainOfEmail(current.email), left_org_ids: released.map((m) => m.orgId) },
      }, nowMs);
      return sessionsEndedFor;
    });
    for (const userId of ended) await this.onSessionsEnded(userId);
    return existing.id;
  }

  /** The account acts on itself: it signed in through the provider. */
  private async audit(tx: Repositories, provider: AuthProvider, actor: AuditActor, action: string, subject: string, after: UserRecord | null): Promise<void> {
    await recordChange(tx, actor, {
      orgId: provider.orgId,
      action,
      resourceType: 'user',
      resourceId: actor.id,
      after,
      details: { provider_id: provider.id, subject },
    }, this.now());
  }
}
