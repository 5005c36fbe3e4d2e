import type { MailMessage } from '@switchyard/core';

/** The password reset mail; for an unverified account it says which orgs it would leave. */
export function passwordResetMail(input: { to: string; link: string; unverifiedIn: Array<{ id: string; name: string }> }): MailMessage {
  const lines = [
    'Someone asked to reset the password of the Switchyard account of this address.',
    'If it was you, open this link within 30 minutes (it works once):',
    '',
    input.link,
    '',
  ];
  if (input.unverifiedIn.length > 0) {
    lines.push(
      'This account was made for your address by someone else and you never confirmed it. Setting',
      'the password makes it yours alone: every other session ends, and it leaves these',
      'organisations unless you choose to keep them:',
      ...input.unverifiedIn.map((org) => `  - ${org.name} (${org.id})`),
      '',
    );
  }
  lines.push('If it was not you, ignore this mail: nothing changes.');
  return { to: input.to, subject: 'Reset your Switchyard password', text: lines.join('\n') };
}

/** The invitation mail: with SMTP it is the only place the link goes, so accepting it proves the address. */
export function invitationMail(input: { to: string; orgName: string; role: string; link: string }): MailMessage {
  const text = [
    `You are invited to join the organisation "${input.orgName}" on Switchyard as ${input.role}.`,
    'Open this link within 7 days to accept (it works once):',
    '',
    input.link,
    '',
    'If you did not expect this, ignore this mail.',
  ].join('\n');
  return { to: input.to, subject: 'Your invitation to Switchyard', text };
}

/** The mail to the holder of an address an org made an account for. */
export function addressVerificationMail(input: { to: string; orgName: string; orgId: string; link: string }): MailMessage {
  const text = [
    `An administrator of the organisation "${input.orgName}" (${input.orgId}) made a Switchyard account for this address.`,
    'If the address is yours, confirm the account within 7 days (the link works once): you set your',
    'own password, every session opened so far ends, and you choose whether to stay in that organisation.',
    '',
    input.link,
    '',
    'If you do not want it, ignore this mail. You can claim the address later with a password reset.',
  ].join('\n');
  return { to: input.to, subject: 'Confirm your Switchyard account', text };
}
