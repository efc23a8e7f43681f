"""The database server itself: my.cnf rendering, bootstrap SQL, local images, dataset snapshots."""
