/**
 * Accounts and subscriptions are numbered by the same stable-id function, so their raw ids can be
 * equal; a prefix keeps `account_id` and `subscription_id` apart for whoever reads them.
 */
export const accountPublicId = (uid: string) => `acct_${uid}`;
export const subscriptionPublicId = (uid: string) => `sub_${uid}`;

/** The stored uid of a printed account id (the prefix is optional when typing it). */
export const accountUidOf = (publicId: string) =>
  publicId
    .trim()
    .toLowerCase()
    .replace(/^acct_/, '');
