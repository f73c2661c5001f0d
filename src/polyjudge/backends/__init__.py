"""polyjudge.backends"""
