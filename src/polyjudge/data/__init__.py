"""polyjudge.data"""
