import { createInMemoryRepositories } from '../src/testing/index.ts';
import {
  apiTokenRepositoryContract,
  auditRepositoryContract,
  unitOfWorkContract,
  environmentRepositoryContract,
  orgRepositoryContract,
  projectRepositoryContract,
  sdkKeyRepositoryContract,
  userRepositoryContract,
  type MakeTenancyRepositories,
} from '../src/testing/contracts/index.ts';

// Each suite gets a fresh state, as each PostgreSQL suite gets a fresh database.
const makeRepos: MakeTenancyRepositories = async () => ({ repos: createInMemoryRepositories(), close: async () => {} });

orgRepositoryContract('in-memory', makeRepos);
userRepositoryContract('in-memory', makeRepos);
projectRepositoryContract('in-memory', makeRepos);
environmentRepositoryContract('in-memory', makeRepos);
sdkKeyRepositoryContract('in-memory', makeRepos);
auditRepositoryContract('in-memory', makeRepos);
unitOfWorkContract('in-memory', makeRepos);
apiTokenRepositoryContract('in-memory', makeRepos);
