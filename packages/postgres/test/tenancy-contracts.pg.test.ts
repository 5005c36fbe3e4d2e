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
} from '@switchyard/core/testing/contracts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';

// Each suite gets its own database, dropped when the suite ends: the contracts start from an
// empty store (there can be only one system org), exactly as each fake suite gets a fresh state.
const makeRepos: MakeTenancyRepositories = async () => {
  const db = await createTestDatabase();
  return { repos: createPostgresRepositories(db.sql), close: () => db.drop() };
};

orgRepositoryContract('postgres', makeRepos);
userRepositoryContract('postgres', makeRepos);
projectRepositoryContract('postgres', makeRepos);
environmentRepositoryContract('postgres', makeRepos);
sdkKeyRepositoryContract('postgres', makeRepos);
auditRepositoryContract('postgres', makeRepos);
unitOfWorkContract('postgres', makeRepos);
apiTokenRepositoryContract('postgres', makeRepos);
