-- A project's customers are listed a page at a time in the order of their
-- ids, which begin with their creation time (store.Customers), byte by
-- byte as the bbolt store orders them.
DROP INDEX customers_project;
CREATE INDEX customers_project ON customers (project_id, id COLLATE "C");
