-- The locals of a call on the policies of one key (<table>_decide, <table>_reserve), declared for
-- fragments/lock_and_read.sql. Spliced as text by cmake/embed_sql.cmake into their DECLARE sections.
n int := array_length(keys, 1);
states text[];
--@fragment clock_locals@
