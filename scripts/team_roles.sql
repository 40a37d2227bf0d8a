-- raggrep's team index (PostgreSQL + pgvector): the two roles a team needs. Run once, as an
-- administrator, in the team index's database; the roles must exist (CREATE ROLE … LOGIN PASSWORD …):
--
--   psql -d code -v writer=raggrep_ci -v reader=raggrep_dev -f scripts/team_roles.sql
--
-- The writer (CI) owns the `raggrep` schema: the first `raggrep push` creates its tables and later
-- versions migrate them. The reader (developers, editors) can only search. Neither needs to be a
-- superuser: pgvector is enabled here, once.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS raggrep AUTHORIZATION :"writer";
GRANT USAGE ON SCHEMA raggrep TO :"reader";
-- Tables the writer creates later (the first push, migrations) are readable too.
ALTER DEFAULT PRIVILEGES FOR ROLE :"writer" IN SCHEMA raggrep GRANT SELECT ON TABLES TO :"reader";
GRANT SELECT ON ALL TABLES IN SCHEMA raggrep TO :"reader";
