import { createInMemoryRepositories, InMemoryChangeNotifier } from '../src/testing/index.ts';
import {
  changeNotifierContract,
  invitationRepositoryContract,
  loginThrottleRepositoryContract,
  refreshTokenRepositoryContract,
  sessionRepositoryContract,
  type MakeChangeNotifiers,
  type MakeSessionRepositories,
} from '../src/testing/contracts/index.ts';

// Each suite gets a fresh state, as each PostgreSQL suite gets a fresh database.
const makeRepos: MakeSessionRepositories = async () => ({ repos: createInMemoryRepositories(), close: async () => {} });

// One process is one bus: the "other instance" is the same notifier, and a dropped connection
// is what simulateReconnect() acts out.
const makeNotifiers: MakeChangeNotifiers = async () => {
  const notifier = new InMemoryChangeNotifier();
  return { notifier, peer: notifier, dropListeningConnection: async () => notifier.simulateReconnect(), close: async () => {} };
};

sessionRepositoryContract('in-memory', makeRepos);
refreshTokenRepositoryContract('in-memory', makeRepos);
invitationRepositoryContract('in-memory', makeRepos);
loginThrottleRepositoryContract('in-memory', makeRepos);
changeNotifierContract('in-memory', makeNotifiers);
