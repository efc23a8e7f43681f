"""Results measured elsewhere (published tables, raw sysbench logs) as stored campaigns."""
