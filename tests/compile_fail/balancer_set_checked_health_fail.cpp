// Taking endpoints out of the set is for health checkers, not for every holder of a balancer.
// expect: private
#include <resil/balancer.hpp>

bool take_out(const resil::balancer& lb) { return lb.set_checked_health("a:80", false); }
