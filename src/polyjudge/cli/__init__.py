"""polyjudge.cli"""
