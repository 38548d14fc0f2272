-- The locals every call of the driver declares for the clock and the decision: t_now (the test clock's time, or the
-- database's), db_now (the database's: expiries are on its clock), grace (the test clock's grace minute:
-- fragments/lock_and_read.sql) and d (what rw1_evaluate or the algorithm's function returns). Spliced as text by
-- cmake/embed_sql.cmake into the DECLARE sections of decide.sql's functions.
t_now bigint;
db_now bigint;
grace bigint := 0;
d record;
