import { accountTokenRepositoryContract, addressProofRepositoriesContract, mailOutboxRepositoryContract, type MakeMailRepositories } from '@switchyard/core/testing/contracts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';

// Each suite gets its own database, dropped when the suite ends.
const makeRepos: MakeMailRepositories = async () => {
  const db = await createTestDatabase();
  return { repos: createPostgresRepositories(db.sql), close: () => db.drop() };
};

mailOutboxRepositoryContract(makeRepos);
accountTokenRepositoryContract(makeRepos);
addressProofRepositoriesContract(makeRepos);
