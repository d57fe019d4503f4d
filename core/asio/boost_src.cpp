// The non-template parts of Boost.Asio (with its OpenSSL layer) and Boost.Beast, compiled once
// for the whole build instead of inline in every file that does network I/O. Every such file
// sees BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION through the
// unitrain_asio target, which this file belongs to.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
