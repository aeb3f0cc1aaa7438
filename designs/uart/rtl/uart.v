// uart: 8N1 transmitter and receiver with a programmable baud divider (clocks per bit =
// divisor + 1), synchronous active-high reset. The receiver samples mid-bit after a start edge
// (two-flop synchronizer on rx). Written for the issue-17 corpus.
module uart #(
    parameter DIV_WIDTH = 12
) (
    input  wire                 clk,
    input  wire                 reset,
    input  wire [DIV_WIDTH-1:0] divisor,
    // transmit
    input  wire                 tx_valid,
    input  wire [7:0]           tx_data,
    output wire                 tx_ready,
    output reg                  tx,
    // receive
    input  wire                 rx,
    output reg                  rx_valid,
    output reg  [7:0]           rx_data
);
    // --- transmitter ---
    reg [DIV_WIDTH-1:0] tx_cnt;
    reg [3:0]           tx_bit;      // 0 idle, 1 start, 2..9 data, 10 stop
    reg [7:0]           tx_shift;

    assign tx_ready = (tx_bit == 4'd0);

    always @(posedge clk) begin
        if (reset) begin
            tx_cnt <= 0; tx_bit <= 0; tx_shift <= 0; tx <= 1'b1;
        end else if (tx_bit == 4'd0) begin
            tx <= 1'b1;
            if (tx_valid) begin
                tx_shift <= tx_data; tx_bit <= 4'd1; tx_cnt <= divisor; tx <= 1'b0;
            end
        end else if (tx_cnt != 0) begin
            tx_cnt <= tx_cnt - 1'b1;
        end else begin
            tx_cnt <= divisor;
            if (tx_bit == 4'd10) begin
                tx_bit <= 4'd0; tx <= 1'b1;
            end else begin
                tx_bit <= tx_bit + 1'b1;
                if (tx_bit == 4'd9) tx <= 1'b1;       // stop bit
                else begin
                    tx <= tx_shift[0]; tx_shift <= {1'b0, tx_shift[7:1]};
                end
            end
        end
    end

    // --- receiver ---
    reg [1:0]           rx_sync;
    reg [DIV_WIDTH-1:0] rx_cnt;
    reg [3:0]           rx_bit;      // 0 idle, 1 start, 2..9 data, 10 stop
    reg [7:0]           rx_shift;
    wire                rx_in = rx_sync[1];

    always @(posedge clk) begin
        if (reset) begin
            rx_sync <= 2'b11; rx_cnt <= 0; rx_bit <= 0; rx_shift <= 0; rx_valid <= 1'b0; rx_data <= 0;
        end else begin
            rx_sync  <= {rx_sync[0], rx};
            rx_valid <= 1'b0;
            if (rx_bit == 4'd0) begin
                if (!rx_in) begin
                    rx_bit <= 4'd1; rx_cnt <= {1'b0, divisor[DIV_WIDTH-1:1]};  // to mid-bit
                end
            end else if (rx_cnt != 0) begin
                rx_cnt <= rx_cnt - 1'b1;
            end else begin
                rx_cnt <= divisor;
                if (rx_bit == 4'd1) begin
                    rx_bit <= rx_in ? 4'd0 : 4'd2;              // false start: back to idle
                end else if (rx_bit == 4'd10) begin
                    rx_bit <= 4'd0;
                    if (rx_in) begin rx_valid <= 1'b1; rx_data <= rx_shift; end
                end else begin
                    rx_shift <= {rx_in, rx_shift[7:1]}; rx_bit <= rx_bit + 1'b1;
                end
            end
        end
    end
endmodule
