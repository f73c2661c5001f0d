"""polyjudge.metaeval"""
