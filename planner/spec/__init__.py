"""The .plan language: parse (text -> syntax tree), lower (tree -> model), format."""
