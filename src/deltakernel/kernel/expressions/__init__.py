"""Predicates and SQL expressions: the predicate tree, pyarrow translation, Spark-SQL parsing and evaluation."""
